"""One program, from its warden's start to its verdict: watched (its time, its output, its report,
its memory) until it and everything it led to are gone, the container cleaned up and checked,
and the verdict judged as the reference words it. It
uses the place, the warden and the clock through what they offer; the program's own process
is program.py's.
"""

import fcntl
import math
import os
import secrets
import select
import signal
import socket
import tempfile
import time

from .clock import POLL_SECONDS, CpuMark, OwnTime
from .places import InContainer, OnThisMachine
from .program import KILL_AFTER_ALARM_SECONDS, OUTPUT_COUNT, REPORT_BYTES
from .protocol import CAUSE_OF_ERROR, Answer, Cause, Request, RunRequest
from .warden import Warden

STDERR_TAIL_BYTES = 4096


# A pipe whose last read brought fewer bytes than this is read again at the next poll, not as
# soon as it has more: a program writing a byte at a time costs the executor POLL_SECONDS'
# worth of reads, not one read per byte.
EAGER_READ_BYTES = 4096
# The program's stderr pipe holds this much where the kernel allows it (Linux's unprivileged
# maximum, fs.pipe-max-size), 64 KiB otherwise: a program that floods its stderr then makes the
# executor drain it, and waits for that, 16 times less often.
STDERR_PIPE_BYTES = 1 << 20
# What a write may need free in a pipe to go in whole (PIPE_BUF): a read that brings the pipe's
# size less this found it full enough to hold back a writer.
PIPE_BUF = 4096


# How long the pipes may stay open once the warden has reaped every process of the program.
DRAIN_SECONDS = 1.0


class Run:
    """One program: started by the warden, watched (time, output, report, memory) until it and
    everything it led to are gone, the container cleaned up, and the verdict judged."""

    def __init__(
        self, request: Request, place: InContainer | OnThisMachine, warden: Warden
    ) -> None:
        names = secrets.token_hex(8)
        self.request: RunRequest = {
            **request,
            "scratch": os.path.join(tempfile.gettempdir(), f"program-{names}"),
            "report": os.path.join(tempfile.gettempdir(), f"report-{names}"),
        }
        self.place, self.warden = place, warden
        self.nonce = secrets.token_hex(16)
        os.mkfifo(self.request["report"])
        os.chmod(self.request["report"], 0o622)  # the program's user may write its report
        # The FIFO is kept open for writing here too, so that reading it never meets its end.
        self.report_fds = (
            os.open(self.request["report"], os.O_RDONLY | os.O_NONBLOCK),
            os.open(self.request["report"], os.O_WRONLY),
        )
        self.report = b""
        errors, errors_write = os.pipe()  # the program's file descriptor 2 (see program_main)
        os.set_blocking(errors, False)
        self.stderr_bytes = _enlarged(errors)
        self.streams = {errors: "stderr"}
        self.eager = {*self.streams, self.report_fds[0]}  # see EAGER_READ_BYTES
        self.stderr_tail = b""
        self.stderr_full = False  # a read found it full since the program's time was last read
        self.main = 0
        self.clock: OwnTime | None = None  # from the program's start, which the warden tells
        self.main_status: int | None = None
        self.main_cpu = 0.0
        self.ended_at: float | None = None
        self.ending: float | None = None
        self.alarmed = self.killed_for_time = self.out_of_memory = self.over_memory = False
        # The memory the container held when the program started (see memory_held).
        self.memory_at_start: float | None = None
        self.next_memory_reading = 0.0
        self.done = self.warden_lost = self.warden_changed = False
        self.oom_kills_before = place.oom_kills()
        self.started = time.monotonic()  # until the warden says when it forked the program
        self.cpu = CpuMark(place)
        pids, handles = place.helpers()
        warden.run({**self.request, "nonce": self.nonce, **pids}, [errors_write, *handles])
        os.close(errors_write)

    def watch(self) -> None:
        """Until the warden says every process of the program is gone and the output pipe is
        drained: the time limit, the out-of-memory killer, and reading what comes."""
        request = self.request
        deadline = self.started + request["wall_seconds"]
        # The program's own time cannot grow faster than the wall clock: before this it cannot
        # have reached the limit, and it is not read (most programs end long before it).
        drained_by = math.inf
        while True:
            now = time.monotonic()
            own = None
            if (
                self.clock
                and self.main_status is None
                and self.ending is None
                # Once its report is in, its verdict is: only its ending is left.
                and _first_report(self.report) is None
            ):
                own = self.clock.read(now, self.main, self.stderr_full)
                if own is not None:
                    self.stderr_full = False
            if own is not None:
                if not self.alarmed and own >= request["seconds"]:
                    self._signal(self.main, signal.SIGALRM)
                    self.alarmed = True
                if own >= request["seconds"] + KILL_AFTER_ALARM_SECONDS:
                    self._end(for_time=True)
            if now > deadline:
                self._end(for_time=True)
            if self.memory_held(now) > request["memory_bytes"]:
                self.over_memory = True
                self._end(for_time=False)
            if self.place.out_of_memory():
                self.out_of_memory = True
                self._end(for_time=False)
            if not (self.done or self.warden_lost) and (
                self.warden.lost()
                or (self.ending is not None and now > self.ending + self.place.reap_seconds)
            ):
                # Never seen: whatever it was, the container is suspect (see clean_up).
                self.warden_lost, drained_by = True, now + DRAIN_SECONDS
                self.warden.replace()
            if (self.done or self.warden_lost) and (not self.streams or now > drained_by):
                break
            self._read_ready()
            if self.done and drained_by == math.inf:
                drained_by = time.monotonic() + DRAIN_SECONDS
        for fd in [*self.streams, *self.report_fds]:
            os.close(fd)

    def memory_held(self, now: float) -> float:
        """The memory the program's processes hold together, read every reading_seconds while
        it runs (0 otherwise): what the container holds beyond what it held at the program's
        start (see InContainer.memory_held). The limit counts what a program touches, not what
        it reserves: the reference sets none, and 64 threads reserve 1.5 GiB of address space
        (their stacks, the allocator's arenas) but hold a few MiB."""
        if (
            self.memory_at_start is None
            or now < self.next_memory_reading
            or self.main_status is not None
            or self.ending is not None
            or _first_report(self.report) is not None
        ):
            return 0.0
        self.next_memory_reading = now + self.place.reading_seconds
        return self.place.memory_held(self.main) - self.memory_at_start

    def _end(self, for_time: bool) -> None:
        """Have the warden end every process of the program (once)."""
        if self.ending is None:
            self.ending = time.monotonic()
            self.killed_for_time = for_time and self.main_status is None
            if self.main_status is None:
                self.warden.end()

    @staticmethod
    def _signal(pid: int, number: int) -> None:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass

    def _read_ready(self) -> None:
        """Wait up to a poll for something to read, and read it; pipes that last brought only a
        few bytes are read at this poll, not watched (see EAGER_READ_BYTES)."""
        control: list[socket.socket | int] = [
            self.warden.control,
            *self.warden.watch,
            *self.place.out_of_memory_watch(),
        ]
        readable = [*self.streams, self.report_fds[0]]
        watched = [fd for fd in readable if fd in self.eager and self._wanted(fd)]
        ready, _, _ = select.select([*control, *watched], [], [], POLL_SECONDS)
        if self.warden.control in ready:
            self._read_messages()
        for fd in readable:
            if self._wanted(fd) and (fd in ready or fd not in self.eager):
                self._read(fd)

    def _wanted(self, fd: int) -> bool:
        if fd == self.report_fds[0]:
            # Only the first report counts: once it is whole, the FIFO is left alone.
            return _first_report(self.report) is None and len(self.report) < REPORT_BYTES
        return fd in self.streams

    def _read(self, fd: int) -> None:
        chunk = b""
        try:
            if fd in self.streams:
                # Into one buffer made once: a read of a few bytes allocates nothing, and none
                # can fail for want of memory while a program holds all of the container's.
                length = os.readv(fd, [_stderr_buffer()])
            else:
                chunk = os.read(fd, REPORT_BYTES - len(self.report))
                length = len(chunk)
        except BlockingIOError:
            return
        if length >= EAGER_READ_BYTES:
            self.eager.add(fd)
        else:
            self.eager.discard(fd)
        if fd == self.report_fds[0]:
            self.report += chunk
        elif not length:
            os.close(fd)
            del self.streams[fd]
            self.eager.discard(fd)
        else:
            tail = _stderr_buffer()[max(0, length - STDERR_TAIL_BYTES) : length]
            self.stderr_tail = (self.stderr_tail + tail)[-STDERR_TAIL_BYTES:]
            self.stderr_full = self.stderr_full or length >= self.stderr_bytes - PIPE_BUF

    def _read_messages(self) -> None:
        """The warden's: the program's pid when it starts, its main process's wait status and CPU
        when that ends, and that every process of it is gone."""
        for kind, values in self.warden.messages():
            if kind == b"S":
                self.main, self.started = values
                self.memory_at_start = self.place.memory_held(self.main)
                self.clock = OwnTime(self.place, self.started, self.request["seconds"], self.cpu)
            elif kind == b"E":
                self.main_status, user, system = values
                self.main_cpu, self.ended_at = user + system, time.monotonic()
                self.ending = self.ending or self.ended_at  # the warden ends the rest itself
            else:
                self.done, (self.warden_changed, killed) = True, values
                self.place.killer_used |= killed

    def clean_up(self) -> dict[str, int]:
        """Remove what the program left, then check the container: what is left is residue."""
        try:
            self.place.clean([self.request["scratch"], self.request["report"]])
            residue = self.place.residue(self.request["scratch"])
        except Exception as error:  # noqa: BLE001  (whatever failed, the container is suspect)
            residue = {f"cleanup failed ({type(error).__name__})": 1}
        if self.warden_lost:
            residue["warden lost"] = 1
        if self.warden_changed:
            # Never seen: no program shares a uid with the warden (see `_own_attributes`).
            residue["warden's attributes changed"] = 1
            self.warden.replace()
        return {what: count for what, count in residue.items() if count}

    def verdict(self, residue: dict[str, int]) -> Answer:
        request = self.request
        main_status = self.main_status  # None: its main process has not ended
        returncode = (
            -signal.SIGKILL if main_status is None else os.waitstatus_to_exitcode(main_status)
        )
        stderr_text = self.stderr_tail.decode("utf-8", errors="replace")
        first = _first_report(self.report)
        stdout_bytes = 0
        if first is not None and len(first) >= OUTPUT_COUNT.size:
            (stdout_bytes,), first = OUTPUT_COUNT.unpack_from(first), first[OUTPUT_COUNT.size :]
        error = ""
        if first == b"P" + self.nonce.encode():
            status, cause, reason = "passed", Cause.PASSED, ""
        elif (
            first == b"T"
            or self.killed_for_time
            # The CPU-time safety net: SIGXCPU at its soft limit, SIGKILL at its hard one.
            or returncode == -signal.SIGXCPU
            or (returncode == -signal.SIGKILL and self.main_cpu >= request["seconds"])
        ):
            status, cause = "timed out", Cause.TIME_LIMIT
            reason = f"time limit of {request['seconds']:g}s"
        elif first is not None and first.startswith(b"F"):
            # The class name, NUL, the text; a report without a NUL (one a program wrote to the
            # FIFO itself) is all text.
            body = first[1:]
            kind, _, message = body.partition(b"\0") if b"\0" in body else (b"", b"", body)
            status, reason = "failed", message.decode("utf-8", errors="replace")
            error = kind.decode("utf-8", errors="replace")
            cause = CAUSE_OF_ERROR.get(error, Cause.EXCEPTION)
        else:
            # It ended without reporting: the reference's verdict for that is "timed out" (its
            # result list stays empty); the reason says what really happened.
            out_of_memory = self.out_of_memory or (
                returncode == -signal.SIGKILL and self.place.oom_kills() > self.oom_kills_before
            )
            status = "timed out"
            cause, reason = _ended_without_report(returncode, stderr_text, out_of_memory)
            if self.over_memory and not out_of_memory:
                cause = Cause.MEMORY
                reason = (
                    f"held more than the memory limit of {request['memory_bytes'] >> 20} MiB; "
                    "ended before the tests completed"
                )
        ended_at = self.ended_at or time.monotonic()
        return {
            "status": status,
            "cause": cause,
            "reason": reason,
            "error": error,
            "returncode": returncode,
            "cpu_seconds": round(self.main_cpu, 4),
            "wall_seconds": round(ended_at - self.started, 4),
            "stdout_bytes": stdout_bytes,
            "stderr_tail": stderr_text,
            "residue": residue,
        }


def run(request: Request, place: InContainer | OnThisMachine, warden: Warden) -> Answer:
    program = Run(request, place, warden)
    program.watch()
    return program.verdict(program.clean_up())


def _stderr_buffer() -> bytearray:
    """The buffer every read of a program's stderr goes into (one a process), as large as the
    pipe may be."""
    global _STDERR_BUFFER
    if _STDERR_BUFFER is None:
        _STDERR_BUFFER = bytearray(STDERR_PIPE_BYTES)
    return _STDERR_BUFFER


_STDERR_BUFFER: bytearray | None = None


def _enlarged(pipe: int) -> int:
    """Make the pipe STDERR_PIPE_BYTES large if the kernel allows it; its size."""
    if not hasattr(fcntl, "F_SETPIPE_SZ"):  # not Linux (`-T sandbox=local` elsewhere)
        return 65536
    try:
        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, STDERR_PIPE_BYTES)
    except OSError:
        pass  # a lower fs.pipe-max-size, or this user's pipe pages used up: as it was
    return fcntl.fcntl(pipe, fcntl.F_GETPIPE_SZ)


def _first_report(data: bytes) -> bytes | None:
    """The first whole report in what was read from the FIFO, or None."""
    if len(data) < 2:
        return None
    length = int.from_bytes(data[:2], "big")
    return data[2 : 2 + length] if len(data) >= 2 + length else None


def _ended_without_report(
    returncode: int, stderr_text: str, out_of_memory: bool
) -> tuple[str, str]:
    """The cause and reason of a program that ended without reporting."""
    if out_of_memory:
        return Cause.MEMORY, (
            "killed by the out-of-memory killer (signal SIGKILL) before the tests completed"
        )
    if returncode < 0:
        return Cause.SIGNAL, (
            f"killed by signal {_signal_name(-returncode)} before the tests completed"
        )
    lines = [line for line in stderr_text.splitlines() if line.strip()]
    ending = f"; stderr ends: {lines[-1]}" if lines else ""
    return Cause.EXIT, f"exited with code {returncode} before the tests completed{ending}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals have no name of their own
        return f"SIGRTMIN+{number - signal.SIGRTMIN}" if number >= signal.SIGRTMIN else str(number)
