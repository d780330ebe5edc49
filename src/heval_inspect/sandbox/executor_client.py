"""The host's end of the executor in one pool container (`executor serve`, started with
`docker exec -i`): requests written to its input as JSON lines, up to PIPELINE_DEPTH at a time,
and its verdicts read back in their order. An executor that dies, hangs, answers nonsense or
finds residue is condemned: the requests waiting behind it are answered NOT_RUN, and only the
pool (pool.py) gives it a new container.
"""

import asyncio
import collections
import contextlib
import json
from typing import TYPE_CHECKING

from ..schema import Execution
from . import EXECUTOR_USER

if TYPE_CHECKING:  # for the annotation only: the executor is the container's, not imported here
    from .executor import Request

# Requests waiting in each executor's input at once: while one program runs, the next is already
# there, so the container does not wait out a round trip through Docker (about a millisecond,
# longer while this process is busy) between programs. The executor reads the next only once the
# one before is answered and its container checked, and after residue reads none (executor.main).
PIPELINE_DEPTH = 2
# After its container has stopped, how long an answer the executor wrote before may still take
# to come through `docker exec`'s stream.
LAST_ANSWER_SECONDS = 1.0


class NotRun:
    """The answer to a request that never ran: a program ahead of it lost the executor or left
    residue (or the executor was found dead), so the container is to be replaced first."""


NOT_RUN = NotRun()


class Executor:
    """One container and the executor process serving programs inside it, PIPELINE_DEPTH
    requests at a time; answers come in the order of the requests. Once it is lost or has found
    residue it is `condemned`: only `Pool.replace` gives it a new container and process."""

    def __init__(self, container: str, source: str) -> None:
        self.container = container
        self.source = source
        self.process: asyncio.subprocess.Process | None = None
        self.generation = 0  # one more for every executor process started
        self.condemned = False
        self.lock = asyncio.Lock()  # held while a request is sent, and while it is replaced
        self.waiting: collections.deque[tuple[asyncio.Future, float]] = collections.deque()
        self.requested = asyncio.Event()
        self.reader: asyncio.Task | None = None
        # `docker wait` on the container: it ends when the container stops. `docker exec -i`
        # does not: once the container has stopped (under gVisor, the host's out-of-memory
        # killer ends its kernel), the command and its output stay open while its input is,
        # and without this the request in hand would wait out its whole time.
        self.watcher: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            "docker",
            "exec",
            "-i",
            "--user",
            EXECUTOR_USER,
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
        self.watcher = await asyncio.create_subprocess_exec(
            "docker",
            "wait",
            self.container,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        self.generation += 1
        self.condemned = False
        self.reader = asyncio.create_task(self._read_answers(self.process, self.watcher))

    async def stop(self) -> None:
        if self.reader:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader
        for process in (self.process, self.watcher):
            if process and process.returncode is None:
                process.kill()
                await process.wait()
        self.process = self.watcher = self.reader = None

    async def run(
        self, request: "Request", timeout: float
    ) -> tuple[Execution | NotRun | None, int]:
        """The executor's verdict, None if it died, did not answer in time or answered something
        that is not a verdict, or NOT_RUN; and the generation of the executor asked."""
        async with self.lock:
            generation = self.generation
            process = self.process
            if self.condemned or process is None or process.returncode is not None:
                return NOT_RUN, generation
            assert process.stdin
            answer: asyncio.Future = asyncio.get_running_loop().create_future()
            self.waiting.append((answer, timeout))
            self.requested.set()
            try:
                process.stdin.write(json.dumps(request).encode() + b"\n")
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass  # gone: the reader reads its end
        return await answer, generation

    async def _read_answers(
        self, process: asyncio.subprocess.Process, watcher: asyncio.subprocess.Process
    ) -> None:
        """Answer the waiting requests in order, each given its time from the answer before it
        (less, once the container has stopped); once the executor is lost or has found residue,
        those behind it never run there."""
        assert process.stdout
        container_stopped = asyncio.ensure_future(_until_stopped(watcher))
        line: asyncio.Future[bytes] | None = None
        try:
            while True:
                while not self.waiting:
                    self.requested.clear()
                    await self.requested.wait()
                answer, timeout = self.waiting[0]
                line = asyncio.ensure_future(process.stdout.readline())
                await asyncio.wait(
                    {line, container_stopped}, timeout=timeout, return_when="FIRST_COMPLETED"
                )
                if container_stopped.done() and not line.done():
                    await asyncio.wait({line}, timeout=LAST_ANSWER_SECONDS)
                execution: Execution | None = None
                if line.done():
                    with contextlib.suppress(ConnectionResetError, ValueError, TypeError):
                        execution = Execution.from_answer(json.loads(line.result()))
                self.waiting.popleft()
                if execution is None or execution.residue:
                    self.condemned = True
                if not answer.done():  # else its asker was cancelled (an interrupted run)
                    answer.set_result(execution)
                if self.condemned:
                    break
        finally:
            for pending in (line, container_stopped):
                if pending is not None:
                    pending.cancel()
            self.condemned = True
            for answer, _ in self.waiting:
                if not answer.done():
                    answer.set_result(NOT_RUN)
            self.waiting.clear()


async def _until_stopped(watcher: asyncio.subprocess.Process) -> None:
    """Returns once `docker wait` has seen the container stop; never, if it could not watch
    (the engine refused it): then each answer's own time bounds the wait, as before."""
    if await watcher.wait() != 0:
        await asyncio.Event().wait()
