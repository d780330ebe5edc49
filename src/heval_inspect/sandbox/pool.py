"""The `heval_pool` sandbox: a few long-lived hardened containers that run programs one at a time.

Inspect's `docker` sandbox starts and removes a compose project for every sample (about a second
each), which dwarfs a HumanEval program (tens of milliseconds). This sandbox starts the same
hardened compose service a few times per task, and keeps one executor process (`executor.py
serve`) inside each container. A program goes to an idle container's executor, which runs it in a
fresh interpreter and afterwards kills every process it left and empties the scratch areas, so no
state passes from one program to the next. The isolation is that of the compose file: no network,
non-root, read-only root, no capabilities, memory, CPU and pids limits.

It runs scoring programs only: `exec`, `read_file` and `write_file` are refused, since a sample
does not own a container (use `-T sandbox=docker` for agents that work in a sandbox).
"""

import asyncio
import json
import os
import shutil
import uuid
from typing import Any, ClassVar

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxUserUnsupportedError,
    sandboxenv,
)

from ..errors import DockerUnavailableError
from . import EXECUTOR_SOURCE, PROGRAM_USER, SandboxFailure

POOL_SIZE_ENV = "HEVAL_POOL_SIZE"
PROJECT_PREFIX = "heval-pool-"
SERVICE = "default"


async def _docker(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "docker",
        *args,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await process.communicate(input)
    return process.returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace")


class Executor:
    """One container and the executor process serving programs inside it."""

    def __init__(self, container: str, source: str) -> None:
        self.container = container
        self.source = source
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            "docker",
            "exec",
            "-i",
            "--user",
            PROGRAM_USER,
            self.container,
            "python3",
            "-I",
            "-c",
            self.source,
            "serve",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=1 << 20,
        )

    async def stop(self) -> None:
        if self.process and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self.process = None

    async def run(self, request: dict, timeout: float) -> dict | None:
        """The verdict, or None if the executor died (a program can kill it: same user)."""
        if self.process is None or self.process.returncode is not None:
            await self._restart()
        assert self.process and self.process.stdin and self.process.stdout
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            await self.process.stdin.drain()
            line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        except (BrokenPipeError, ConnectionResetError):
            line = b""
        except TimeoutError:
            await self.stop()
            raise SandboxFailure(
                f"The executor in container {self.container[:12]} did not answer within "
                f"{timeout:g}s."
            )
        if not line:
            await self.stop()
            return None
        return json.loads(line)

    async def _restart(self) -> None:
        await self.stop()
        # The container itself may have stopped (its main process killed): start it again.
        code, running, error = await _docker("inspect", "-f", "{{.State.Running}}", self.container)
        if code != 0:
            # Removed from outside (a program cannot remove its own container): the run's
            # infrastructure failed, so the sample is an error, never a verdict.
            raise SandboxFailure(
                f"Sandbox container {self.container[:12]} is gone ({error.strip()}); "
                f"`inspect eval-retry` the log to score the remaining samples."
            )
        if running.strip() != "true":
            code, _, error = await _docker("start", self.container)
            if code != 0:
                raise SandboxFailure(f"Could not restart container {self.container[:12]}: {error}")
        await self.start()


class Pool:
    """The containers of one task and the queue of those that are idle."""

    def __init__(self, project: str, compose_file: str, size: int) -> None:
        self.project = project
        self.compose_file = compose_file
        self.size = size
        self.idle: asyncio.Queue[Executor] = asyncio.Queue()
        self.executors: list[Executor] = []

    def compose(self, *args: str) -> list[str]:
        return ["compose", "-p", self.project, "-f", self.compose_file, *args]

    async def start(self, source: str) -> None:
        for step in (("build",), ("up", "-d", "--scale", f"{SERVICE}={self.size}")):
            code, _, error = await _docker(*self.compose(*step))
            if code != 0:
                raise SandboxFailure(
                    f"`docker compose {' '.join(step)}` failed for the sandbox pool: {error[-2000:]}"
                )
        code, ids, error = await _docker(*self.compose("ps", "-q", SERVICE))
        containers = ids.split()
        if code != 0 or len(containers) != self.size:
            raise SandboxFailure(f"The sandbox pool did not start {self.size} containers: {error}")
        for container in containers:
            executor = Executor(container, source)
            await executor.start()
            self.executors.append(executor)
            self.idle.put_nowait(executor)

    async def run(self, request: dict, timeout: float) -> dict:
        executor = await self.idle.get()
        try:
            result = await executor.run(request, timeout)
            if result is None:
                # The executor died with the program. Run it once more on a fresh executor: if
                # the program kills it again, that is the program's doing.
                result = await executor.run(request, timeout)
            if result is None:
                result = killed_executor_verdict()
            return result
        finally:
            self.idle.put_nowait(executor)

    async def stop(self) -> None:
        for executor in self.executors:
            await executor.stop()
        await _docker(*self.compose("down", "--timeout", "1"))


async def _check_docker() -> None:
    """Before any sample runs (so before any model is called): is there an engine to run on?"""
    if shutil.which("docker") is None:
        raise DockerUnavailableError(
            "Docker is not installed, and the sandbox runs every program in a Docker container: "
            "install Docker Engine 24 or newer with the compose v2 plugin "
            "(https://docs.docker.com/engine/install/), then run the eval again."
        )
    code, _, error = await _docker("info", "--format", "{{.ServerVersion}}")
    if code != 0:
        raise DockerUnavailableError(
            "Docker is not running, and the sandbox runs every program in a Docker container: "
            "start the engine (e.g. `sudo systemctl start docker`, or Docker Desktop) until "
            f"`docker info` works, then run the eval again. docker said: {error.strip()}"
        )
    code, _, _ = await _docker("compose", "version")
    if code != 0:
        raise DockerUnavailableError(
            "The docker compose v2 plugin is missing (`docker compose version` fails): install "
            "it (https://docs.docker.com/compose/install/), then run the eval again."
        )


def killed_executor_verdict() -> dict:
    reason = "the program killed the sandbox's executor"
    return {
        "status": "failed",
        "reason": reason,
        "returncode": -9,
        "cpu_seconds": 0.0,
        "wall_seconds": 0.0,
        "stdout_bytes": 0,
        "stderr_tail": "",
    }


def pool_size() -> int:
    value = os.environ.get(POOL_SIZE_ENV)
    if value is None:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{POOL_SIZE_ENV} must be a whole number of containers, 1 or more.")
    return int(value)


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
        await _check_docker()
        if str(config) in cls.pools:
            return
        pool = Pool(PROJECT_PREFIX + uuid.uuid4().hex[:8], str(config), pool_size())
        cls.pools[str(config)] = pool
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
        _, projects, _ = await _docker("compose", "ls", "-a", "-q")
        for project in projects.split():
            if project.startswith(PROJECT_PREFIX) and (id is None or project == id):
                await _docker("compose", "-p", project, "down", "--timeout", "1")

    async def run_program(self, request: dict, timeout: float) -> dict:
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


_ONLY_PROGRAMS = (
    "The heval_pool sandbox only runs scoring programs; use -T sandbox=docker for solvers or "
    "tools that work inside a sandbox."
)
