"""Running one program in the current sample's sandbox and reading the executor's verdict."""

import json
import logging
import sys
from typing import TYPE_CHECKING, TypeVar

from inspect_ai.util import SandboxEnvironment, SandboxUnavailableError, sandbox

from ..inspect_internals import LocalSandboxEnvironment
from ..schema import Execution, executor_lost
from . import (
    DEFAULT_MEMORY_MIB,
    DEFAULT_TIMEOUT,
    EXECUTOR_GRACE_SECONDS,
    EXECUTOR_SOURCE,
    EXECUTOR_USER,
    FILE_BYTES,
    PROGRAM_TASKS,
    WALL_CLOCK_FACTOR,
)
from .pool_sandbox import PoolSandboxEnvironment, standalone_pool

if TYPE_CHECKING:  # for the annotation only: the executor is the container's, not imported here
    from .executor import Request

ST = TypeVar("ST", bound=SandboxEnvironment)
logger = logging.getLogger(__name__)


async def execute(
    program: str, timeout: float = DEFAULT_TIMEOUT, memory_mib: int = DEFAULT_MEMORY_MIB
) -> Execution:
    """Run one program in the current sample's sandbox and return the executor's verdict."""
    wall_seconds = timeout * WALL_CLOCK_FACTOR
    request: Request = {
        "program": program,
        "seconds": timeout,
        "wall_seconds": wall_seconds,
        "memory_bytes": memory_mib << 20,
        "file_bytes": FILE_BYTES,
        "tasks": PROGRAM_TASKS,
    }
    try:
        environment = sandbox()
    except ProcessLookupError:
        # No sandbox in this context: a log re-scored with `inspect score`, which starts none.
        environment = await standalone_pool()
    if pool := _as(environment, PoolSandboxEnvironment):
        return await pool.run_program(request, wall_seconds + EXECUTOR_GRACE_SECONDS)
    if _as(environment, LocalSandboxEnvironment):
        # No container and no other user: this machine's Python, as the user running the eval.
        command, user = [sys.executable, "-I", "-c", EXECUTOR_SOURCE, "local"], None
    else:
        command, user = ["python3", "-I", "-c", EXECUTOR_SOURCE], EXECUTOR_USER
    try:
        result = await environment.exec(
            command,
            input=json.dumps(request),
            timeout=int(wall_seconds + EXECUTOR_GRACE_SECONDS),
            user=user,
        )
    except TimeoutError:
        ended, stderr = "did not answer in time", ""
    except SandboxUnavailableError as error:
        # Its container stopped while the program ran: under gVisor, whose kernel has no
        # out-of-memory killer of its own, a program that takes the container's memory takes
        # the whole sandbox down (docs/sandbox.md, gVisor).
        ended, stderr = "lost its container", str(error)[-2000:]
    else:
        try:
            return Execution.from_answer(json.loads(result.stdout))
        except (ValueError, TypeError):  # not JSON, or not a verdict
            ended, stderr = f"exited {result.returncode}", result.stderr[-2000:]
    # The container is this sample's alone (Inspect removes it with the sample), so whatever kept
    # its executor from answering happened while the program ran: judged as the pool judges a
    # lost executor, never a sample error, and said in the log.
    logger.warning(
        "heval_inspect: the sandbox's executor %s without a verdict; the program is judged "
        "'timed out'. stderr: %s",
        ended,
        stderr,
    )
    return executor_lost()


def _as(environment: SandboxEnvironment, kind: type[ST]) -> ST | None:
    """The environment as that kind of sandbox, or None if it is another kind."""
    try:
        return environment.as_type(kind)
    except TypeError:
        return None
