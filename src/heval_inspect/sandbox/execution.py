"""Running one program in the current sample's sandbox and reading the executor's verdict."""

import json
import sys
from dataclasses import dataclass
from typing import TypeVar

from inspect_ai.util import SandboxEnvironment, sandbox

# Not exported by inspect_ai.util; needed to run the executor in its no-container mode.
from inspect_ai.util._sandbox.local import LocalSandboxEnvironment

from . import (
    DEFAULT_TIMEOUT,
    EXECUTOR_GRACE_SECONDS,
    EXECUTOR_SOURCE,
    FILE_BYTES,
    MEMORY_BYTES,
    PROGRAM_USER,
    WALL_CLOCK_FACTOR,
    SandboxFailure,
)
from .pool import PoolSandboxEnvironment, killed_executor_verdict

ST = TypeVar("ST", bound=SandboxEnvironment)

# How `docker exec` reports a command killed by SIGKILL (128 + 9).
SIGKILL_EXIT_CODE = 137


@dataclass(frozen=True)
class Execution:
    status: str  # "passed", "failed" or "timed out"
    reason: str
    returncode: int
    cpu_seconds: float
    wall_seconds: float
    stdout_bytes: int
    stderr_tail: str

    @property
    def verdict(self) -> str:
        """The reference harness's result string: "passed", "failed: ..." or "timed out"."""
        return "failed: " + self.reason if self.status == "failed" else self.status


async def execute(program: str, timeout: float = DEFAULT_TIMEOUT) -> Execution:
    """Run one program in the current sample's sandbox and return the executor's verdict."""
    wall_seconds = timeout * WALL_CLOCK_FACTOR
    request = {
        "program": program,
        "seconds": timeout,
        "wall_seconds": wall_seconds,
        "memory_bytes": MEMORY_BYTES,
        "file_bytes": FILE_BYTES,
    }
    environment = sandbox()
    if pool := _as(environment, PoolSandboxEnvironment):
        verdict = await pool.run_program(request, wall_seconds + EXECUTOR_GRACE_SECONDS)
        return Execution(**verdict)
    if _as(environment, LocalSandboxEnvironment):
        # No container and no other user: this machine's Python, as the user running the eval.
        command, user = [sys.executable, "-I", "-c", EXECUTOR_SOURCE, "local"], None
    else:
        command, user = ["python3", "-I", "-c", EXECUTOR_SOURCE], PROGRAM_USER
    result = await environment.exec(
        command,
        input=json.dumps(request),
        timeout=int(wall_seconds + EXECUTOR_GRACE_SECONDS),
        user=user,
    )
    if result.returncode == SIGKILL_EXIT_CODE and not result.stdout:
        # The program killed its executor (`kill -1` reaches it: same user). The container is
        # this sample's alone, so that is the program's doing, judged as the pool judges it.
        return Execution(**killed_executor_verdict())
    try:
        return Execution(**json.loads(result.stdout))
    except (json.JSONDecodeError, TypeError) as error:
        raise SandboxFailure(
            f"The sandbox's executor did not report a verdict (exit code {result.returncode}). "
            f"stdout: {result.stdout[-1000:]!r} stderr: {result.stderr[-2000:]!r}"
        ) from error


def _as(environment: SandboxEnvironment, kind: type[ST]) -> ST | None:
    """The environment as that kind of sandbox, or None if it is another kind."""
    try:
        return environment.as_type(kind)
    except TypeError:
        return None
