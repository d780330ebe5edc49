"""The `heval_pool` sandbox: Inspect's sandbox interface over a pool of hardened containers
(pool.py), one pool per compose file for a whole run, and one for each event loop that scores
programs outside any task's sandbox (`standalone_pool`).

Inspect's `docker` sandbox starts and removes a compose project for every sample (about a second
each), which dwarfs a HumanEval program (tens of milliseconds). This sandbox starts the same
hardened compose service a few times per task and runs each program in whichever container is
free (pool.py says how, and how a container left unclean is replaced).

It runs scoring programs only: `exec`, `read_file` and `write_file` are refused, since a sample
does not own a container (use `-T sandbox=docker` for agents that work in a sandbox).
"""

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxUserUnsupportedError,
    sandboxenv,
)

from ..schema import Execution
from . import EXECUTOR_SOURCE, sandbox_compose_file
from .docker_cli import check_docker, docker
from .pool import PROJECT_PREFIX, SERVICE, Pool, new_pool

if TYPE_CHECKING:  # for the annotation only: the executor is the container's, not imported here
    from .executor import Request


@sandboxenv(name="heval_pool")
class PoolSandboxEnvironment(SandboxEnvironment):
    # One pool per compose file: Inspect starts each sandbox configuration once per run (task_init)
    # and shuts it down at the end (task_cleanup), whatever the number of tasks using it.
    pools: ClassVar[dict[str, Pool]] = {}

    def __init__(self, pool: Pool) -> None:
        super().__init__()
        self.pool = pool

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        if str(config) in cls.pools:
            await check_docker()
            return
        pool = cls.pools[str(config)] = await new_pool(str(config))
        await pool.start(EXECUTOR_SOURCE)

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        return {SERVICE: cls(cls.pools[str(config)])}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        pass  # the executor cleans up after every program

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        pool = cls.pools.pop(str(config), None)
        if pool is not None:
            await pool.stop()

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        _, projects, _ = await docker("compose", "ls", "-a", "-q")
        for project in projects.split():
            if project.startswith(PROJECT_PREFIX) and (id is None or project == id):
                await docker("compose", "-p", project, "down", "--timeout", "1")

    async def run_program(self, request: "Request", timeout: float) -> Execution:
        return await self.pool.run(request, timeout)

    async def exec(self, cmd: list[str], *args: Any, **kwargs: Any) -> ExecResult[str]:
        if kwargs.get("user") is not None:
            # What Inspect's probe for root access (at every sample's start) expects to hear
            # from a sandbox that cannot run commands as that user.
            raise SandboxUserUnsupportedError(_ONLY_PROGRAMS)
        raise NotImplementedError(_ONLY_PROGRAMS)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        raise NotImplementedError(_ONLY_PROGRAMS)

    async def read_file(self, file: str, text: bool = True) -> str | bytes:  # type: ignore[override]
        raise NotImplementedError(_ONLY_PROGRAMS)


async def standalone_pool() -> PoolSandboxEnvironment:
    """The pool for programs scored outside any task's sandbox: `inspect score` re-scoring a log
    starts no sandbox. One per event loop, started on first use with the package's compose file
    and removed when the loop ends (see `_serve_standalone`)."""
    loop = asyncio.get_running_loop()
    if loop not in _STANDALONE:
        started: asyncio.Future[PoolSandboxEnvironment] = loop.create_future()
        _STANDALONE[loop] = (started, loop.create_task(_serve_standalone(started)))
    started = _STANDALONE[loop][0]
    # Once started, the same environment for every program (`heval-inspect score` asks for it
    # once a program): it holds nothing of any one program.
    return started.result() if started.done() else await asyncio.shield(started)


_STANDALONE: dict[
    asyncio.AbstractEventLoop, tuple[asyncio.Future[PoolSandboxEnvironment], asyncio.Task]
] = {}


async def _serve_standalone(started: asyncio.Future[PoolSandboxEnvironment]) -> None:
    """Start a pool and keep it until this task is cancelled, as asyncio does with the tasks
    left when its loop ends: then the pool is stopped while the loop can still wait for it."""
    pool = None
    try:
        pool = await new_pool(str(sandbox_compose_file()))
        await pool.start(EXECUTOR_SOURCE)
    except BaseException as error:
        # Failed or interrupted (Ctrl-C) while starting: no container of it stays behind.
        if pool is not None:
            await pool.stop()
        if not isinstance(error, Exception):  # cancelled (Ctrl-C), or the process is ending
            started.cancel()
            raise
        # The error goes to those waiting for the pool, through `started`, and nowhere else: an
        # exception of this task, which nothing awaits, would be printed with its traceback
        # ("Task exception was never retrieved") after the one clear message.
        started.set_exception(error)
        return
    started.set_result(PoolSandboxEnvironment(pool))
    try:
        await asyncio.Event().wait()
    finally:
        await pool.stop()


_ONLY_PROGRAMS = (
    "The heval_pool sandbox only runs scoring programs; use -T sandbox=docker for solvers or "
    "tools that work inside a sandbox."
)
