"""A pool of hardened sandbox containers (one compose project) and the programs it runs on them.

The pool starts the sandbox's compose service a few times (as many as capacity.py says) and keeps
one executor process (`executor serve`, reached through executor_client.py) inside each
container. A program goes to an idle container's executor, which runs it in a process of its own
forked from the executor, as an unprivileged user, and afterwards removes everything it left
(processes, files, IPC objects) and checks that the container is as it was. When that check finds
residue, or the executor dies, hangs or answers nonsense, the container is replaced by a new one
before it runs another program: no state passes from one program to the next. The isolation is
that of the compose file: no network, read-only root, memory, CPU, pids and IPC limits.

Inspect reaches a pool as the `heval_pool` sandbox (pool_sandbox.py).
"""

import asyncio
import dataclasses
import json
import logging
import os
import re
import uuid
from typing import TYPE_CHECKING

from ..errors import SandboxStartError
from ..schema import Execution, executor_lost
from . import RUNTIME_VARIABLE, SandboxFailure
from .capacity import container_share, file_table, pool_size
from .docker_cli import check_docker, docker, last_line
from .executor_client import NOT_RUN, PIPELINE_DEPTH, Executor
from .provenance import sandbox_provenance

if TYPE_CHECKING:  # for the annotation only: the executor is the container's, not imported here
    from .executor import Request

logger = logging.getLogger(__name__)

PROJECT_PREFIX = "heval-pool-"
BUILD_PROJECT = "heval-inspect-sandbox"
SERVICE = "default"
# Pauses between tries of `docker compose up` when it fails (see Pool.start_containers).
START_RETRY_PAUSES = (0.5, 1.0, 2.0)


class Pool:
    """The containers of one task and the queue of their free places (PIPELINE_DEPTH each)."""

    def __init__(self, project: str, compose_file: str, size: int) -> None:
        self.project = project
        self.compose_file = compose_file
        self.size = size
        self.idle: asyncio.Queue[Executor] = asyncio.Queue()
        self.executors: list[Executor] = []
        self.replacing = asyncio.Lock()  # one compose call at a time changes the project

    @property
    def capacity(self) -> int:
        """How many programs the pool holds at once: running, or next in an executor's input."""
        return self.size * PIPELINE_DEPTH

    def compose(self, *args: str) -> list[str]:
        return ["compose", "-p", self.project, "-f", self.compose_file, *args]

    async def start(self, source: str) -> None:
        await remove_dead_pools()
        # Built under one project name, not the pool's own: compose labels the image with the
        # project, so a new name each run would give the same image a new id each run (the
        # id the log's provenance records).
        build = ["compose", "-p", BUILD_PROJECT, "-f", self.compose_file, "build"]
        code, _, error = await docker(*build)
        if code != 0:
            raise SandboxStartError(
                f"The sandbox image could not be built (`docker compose build`: "
                f"{last_line(error)}). Its base image is "
                f"{sandbox_provenance('pool')['base_image']}: make that one Docker has or can "
                f"pull, or name another with HEVAL_SANDBOX_BASE_IMAGE, then run again."
            )
        for container in await self.start_containers(self.size):
            executor = Executor(container, source)
            await executor.start()
            self.executors.append(executor)
            for _ in range(PIPELINE_DEPTH):
                self.idle.put_nowait(executor)

    async def run(self, request: "Request", timeout: float) -> Execution:
        """The executor's verdict, with how many containers were replaced on its account."""
        executor = await self.idle.get()
        try:
            replaced = 0
            while replaced < 2:
                answer, generation = await executor.run(request, timeout)
                if answer is NOT_RUN:
                    # Not on its account: a program ahead of it lost the executor or left
                    # residue. Whichever of them comes first replaces the container.
                    await self.replace(executor, generation, "an earlier program's doing")
                    continue
                if isinstance(answer, Execution):
                    if answer.residue:
                        await self.replace(
                            executor, generation, f"the program left {answer.residue}"
                        )
                        replaced += 1
                    return dataclasses.replace(answer, containers_replaced=replaced)
                # Whatever ended the executor (its container killed or removed from outside, or
                # anything a program might find), the program runs once more in a new container;
                # if the executor is lost again, that is the program's doing.
                await self.replace(
                    executor, generation, "its executor died, hung or answered nonsense"
                )
                replaced += 1
            return dataclasses.replace(executor_lost(), containers_replaced=2)
        finally:
            self.idle.put_nowait(executor)

    async def replace(self, executor: Executor, generation: int, why: str) -> None:
        """Put a new container in the place of the executor's (whether it was left unclean,
        killed or removed), and start its executor there, unless that was done already since
        the executor of that generation answered. Only an engine that cannot start one fails
        the sample."""
        async with executor.lock:
            if executor.generation != generation:
                return  # done already, since that generation's answer
            await executor.stop()
            async with self.replacing:
                await docker("rm", "-f", executor.container)
                [executor.container] = await self.start_containers(1)
            logger.info(
                "heval_pool: replaced sandbox container %s: %s", executor.container[:12], why
            )
            await executor.start()

    async def start_containers(self, wanted: int) -> list[str]:
        """Bring the pool back to its size: the ids of the `wanted` containers started for it.

        They are counted among the running containers the pool did not know before, not as the
        pool's size: another of its containers may stop meanwhile (an executor that finds residue
        stops its own container at once, before the pool comes to replace it)."""
        known = {executor.container for executor in self.executors}
        command = ("up", "-d", "--no-recreate", "--scale", f"{SERVICE}={self.size}")
        started: list[str] = []
        code, up_error = 0, ""
        for pause in (*START_RETRY_PAUSES, None):
            code, _, up_error = await docker(*self.compose(*command))
            if code == 0:
                listed, ids, _ = await docker(*self.compose("ps", "-q", SERVICE))
                started = [container for container in ids.split() if container not in known]
                if listed == 0 and len(started) >= wanted:
                    return started[:wanted]
            if pause is None:
                break
            # A container removed from outside (`docker rm -f`) may still be going: the engine
            # refuses to start the service meanwhile. A container that stopped as soon as it
            # started is started again by the next `up`. What does not pass fails below.
            await asyncio.sleep(pause)
        if code != 0:
            raise SandboxStartError(
                f"The sandbox's containers could not be started (`docker compose up`: "
                f"{last_line(up_error)}). Fix what Docker says, then run again (their runtime: "
                f"{os.environ.get(RUNTIME_VARIABLE) or 'runc'}, which {RUNTIME_VARIABLE} sets, "
                f"runc if unset; `docker info` lists the runtimes Docker knows)."
            )
        raise SandboxFailure(
            f"The sandbox pool needed {wanted} new container(s) and `docker compose ps` lists "
            f"{len(started)} running: they stopped as soon as they started, or Docker could not "
            f"list them. `docker compose -p {self.project} logs` says why."
        )

    async def stop(self) -> None:
        for executor in self.executors:
            await executor.stop()
        await docker(*self.compose("down", "--timeout", "1"))


async def remove_dead_pools() -> list[str]:
    """Remove the pools on this engine whose every container has stopped: those of eval
    processes killed without cleaning up, whose executors stopped their containers (see
    executor.main). A live pool's containers run. The names of the pools removed."""
    code, listing, _ = await docker("compose", "ls", "-a", "--format", "json")
    if code != 0:
        return []
    dead = [
        project["Name"]
        for project in json.loads(listing or "[]")
        # Only exited: a pool being started has containers "created" or "running".
        if project["Name"].startswith(PROJECT_PREFIX)
        and re.fullmatch(r"exited\(\d+\)", project["Status"])
    ]
    for name in dead:
        await docker("compose", "-p", name, "down", "--timeout", "1")
        logger.info("heval_pool: removed the stopped sandbox pool %s", name)
    return dead


async def new_pool(compose_file: str) -> Pool:
    """A pool of the compose file's service, as many containers as `pool_size` says; not started."""
    machine_memory = await check_docker()
    size = pool_size(machine_memory, file_table(), container_share(compose_file))
    return Pool(PROJECT_PREFIX + uuid.uuid4().hex[:8], compose_file, size)
