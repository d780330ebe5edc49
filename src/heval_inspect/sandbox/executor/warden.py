"""The warden: every program's parent and child subreaper, which starts each program it is sent,
ends whatever of it outlives its main process, reaps it all and says so; and the executor's
handle on it (Warden), with the few messages they exchange on a unix socket.
It neither times nor judges a program (the run does) nor checks the container after it.
"""

import json
import os
import resource
import select
import signal
import socket
import struct
import time
from collections.abc import Callable
from typing import TypedDict

from .clock import POLL_SECONDS
from .kernel import (
    LIBC,
    PR_SET_CHILD_SUBREAPER,
    close_all_but,
    container_pids,
    end_watch,
    other_pids,
    prctl,
)
from .program import program_main
from .protocol import Place, WardenRequest
from .world import CHILD_ENVIRONMENT

# How long the warden may take to end and reap every process of the program.
REAP_SECONDS = 2.0
# The same under gVisor, whose forks, signals and /proc cost 10 to 30 times more: stopping and
# ending 64 processes there can take longer than REAP_SECONDS.
GVISOR_REAP_SECONDS = 10.0


# Between the executor and its warden, on a unix socket. The executor sends "R" + the length of a
# JSON request (4 bytes) + the request, with the program's stderr pipe attached, and "K" to end
# the program at once. The warden answers "S" + the program's pid and the moment (monotonic
# clock) it forked it, "E" + its main process's wait status and CPU seconds when that ends, and
# "D" + whether any of the warden's own attributes (`_own_attributes`) differs from what it was
# at its start, and whether it woke the executor's killer (which is then used up), once every
# process of the program is gone.
STARTED, ENDED, DONE = struct.Struct(">id"), struct.Struct(">idd"), struct.Struct(">??")
RECEIVE_BYTES = 1 << 16
# ioprio_get(2)'s system call number (Python has no wrapper), and its "this process" selector.
SYS_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(os.uname().machine)
IOPRIO_WHO_PROCESS = 1
RESOURCE_LIMITS = sorted(
    getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")
)


def _own_attributes() -> tuple:
    """Everything about this process that another process could set, given the permission:
    scheduling policy and priority, nice, CPU affinity, I/O priority, resource limits. The warden
    compares them after every program: no program can reach it (it never shares a uid with
    one: see `InContainer.end_programs`), and if one ever did, its container is replaced."""
    return (
        os.sched_getscheduler(0),
        os.sched_getparam(0).sched_priority,
        os.getpriority(os.PRIO_PROCESS, 0),
        frozenset(os.sched_getaffinity(0)),
        LIBC.syscall(SYS_IOPRIO_GET, IOPRIO_WHO_PROCESS, 0) if SYS_IOPRIO_GET else None,
        tuple(resource.getrlimit(limit) for limit in RESOURCE_LIMITS),
    )


class _Program(TypedDict):
    """The warden's program: its main process (0: none), whether that has ended, whether the
    warden is ending it, and the pipe that tells the decoy's death (or none)."""

    main: int
    ended: bool
    ending: bool
    decoy: list[int]


def _warden(control: socket.socket, place: "Place") -> None:
    """The warden's life, from the executor's start to its end: start each program it is sent,
    end every process of it once its main process has ended, the decoy has died (the container
    ran out of memory) or the executor says so, reap them all, and say so. Never returns."""
    code = 1
    try:
        container_processes, woken = _become_warden(control)
        attributes = _own_attributes()
        # The programs' environment, set once here rather than in each program's process (every
        # page a forked process writes to is copied for it: most of what a program costs).
        os.environ.clear()
        os.environ.update(CHILD_ENVIRONMENT)
        program: _Program = {"main": 0, "ended": False, "ending": False, "decoy": []}

        def end() -> None:
            program["ending"] = True
            place.end_programs(program["main"])

        fds: list[int]
        received, fds = b"", []  # what the executor sent, and the file descriptors with it
        # The program being run (set with each request; read only once one has started).
        request: WardenRequest | None = None
        main = 0
        while True:
            watched: list[socket.socket | int] = [control, woken, *program["decoy"]]
            ready, _, _ = select.select(watched, [], [])
            if woken in ready:
                os.read(woken, 4096)
            if control in ready:
                data, new_fds, _, _ = socket.recv_fds(control, RECEIVE_BYTES, 3)
                if not data:  # the executor is gone: so is its program
                    if program["main"]:
                        end()
                    break
                received, fds = received + data, fds + new_fds
                while received[:1] == b"K" or len(received) >= 5:
                    if received[:1] == b"K":
                        received = received[1:]
                        if program["main"] and not program["ending"]:
                            end()
                        continue
                    length = int.from_bytes(received[1:5], "big")
                    if len(received) < 5 + length:
                        break
                    request = json.loads(received[5 : 5 + length])
                    received = received[5 + length :]
                    main = _start_program(program, request, fds, control, place)
                    fds = []  # all passed on: its stderr pipe closed, the killer's ends kept
            if program["decoy"] and program["decoy"][0] in ready and not program["ending"]:
                end()  # the container ran out of memory: the decoy's memory is all the time left
            _reap(program, end, request, main, container_processes, attributes, control, place)
        while True:
            try:
                os.wait()
            except ChildProcessError:
                break
        code = 0
    finally:
        os._exit(code)


def _become_warden(control: socket.socket) -> tuple[set[int] | None, int]:
    """The warden's first steps, before it reads any request: a child subreaper (where the
    kernel has them), with standard input and output that are not the executor's, whose every
    child's end writes to a pipe that wakes its loop, and which keeps no file descriptor but
    that pipe's and `control`. Returns the container's own processes where there are no
    subreapers (None where there are), and the pipe's read end."""
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        # Not seen from here: processes that its programs' processes leave go to init.
        container_processes: set[int] | None = None
    except OSError:
        # A kernel without child subreapers (gVisor's, as of 2022): orphans go to the
        # container's init, which reaps them. The processes here now are the container's own.
        container_processes = container_pids()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)  # the executor's request and answer streams are not the warden's
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)  # every child's end wakes the warden's select
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    close_all_but(control.fileno(), woken, wake)
    return container_processes, woken


def _start_program(
    program: _Program,
    request: WardenRequest,
    fds: list[int],
    control: socket.socket,
    place: "Place",
) -> int:
    """Fork the program's process, which runs `program_main` (and never returns here) with `fds`'
    first, its stderr pipe's write end; in the warden, close that, keep the rest (the killer's
    pipe ends, for `place.end_programs`) in place of the last program's, and tell the executor
    the program's pid and when it was forked. The pid."""
    program.update({"main": 0, "ended": False, "ending": False})
    program["decoy"] = end_watch(request["decoy"]) if request["decoy"] else []
    forked_at = time.monotonic()
    program["main"] = main = os.fork()
    if main == 0:
        program_main(request, request["nonce"], fds[0], place)
    os.close(fds[0])
    for fd in place.killer_handles:
        os.close(fd)
    place.killer_handles = fds[1:]
    control.sendall(b"S" + STARTED.pack(main, forked_at))
    return main


def _reap(
    program: _Program,
    end: Callable[[], None],
    request: WardenRequest | None,
    main: int,
    container_processes: set[int] | None,
    attributes: tuple,
    control: socket.socket,
    place: "Place",
) -> None:
    """Reap the program's processes that have ended, until none has that is not reaped yet:
    tell the executor when its main process has ended ("E"); end whatever of it lives on after
    that (once: `end`); and once every process of it is gone, tell the executor ("D", with
    whether `attributes` changed) and forget the program."""
    while program["main"]:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            if program["ended"] and container_processes is not None:
                # Without a subreaper, processes the program left are not this one's
                # children: they are ended all the same, and the container's init reaps
                # them (the executor then checks its count of processes).
                program["ending"] = True
                assert request is not None  # its main process has ended: it was started
                own = container_processes | {request["decoy"], request["killer"]}
                _end_orphans(place, main, own)
            if program["ended"]:  # every process of the program is gone
                changed = _own_attributes() != attributes
                control.sendall(b"D" + DONE.pack(changed, place.killer_spent))
                place.killer_spent = False
                for fd in program["decoy"]:
                    os.close(fd)
                program.update({"main": 0, "decoy": []})
            break
        if pid == program["main"]:
            program["ended"] = True
            control.sendall(b"E" + ENDED.pack(status, usage.ru_utime, usage.ru_stime))
        elif not pid:
            # Processes of the program live on after its main process: they are ended
            # (once: the one kill reaches every process of the program, and one being
            # forked meanwhile gets it too or is never made). Most programs leave none.
            if program["ended"] and not program["ending"]:
                end()
                continue
            break


class Warden:
    """The executor's handle on its warden: started once, and again if it is lost."""

    def __init__(self, place: "Place") -> None:
        self.place = place
        self.start()

    def start(self) -> None:
        ours, its = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _warden(its, self.place)
        its.close()
        self.pid, self.control, self.watch = pid, ours, end_watch(pid)
        self.received = b""

    def run(self, request: WardenRequest, outputs: list[int]) -> None:
        """Have the warden start a program: its request and its output pipes' write ends."""
        payload = json.dumps(request).encode()
        message = b"R" + len(payload).to_bytes(4, "big") + payload
        sent = socket.send_fds(self.control, [message], outputs)
        self.control.sendall(message[sent:])

    def end(self) -> None:
        self.control.sendall(b"K")

    def messages(self) -> list[tuple[bytes, tuple]]:
        """The warden's messages that have arrived whole."""
        try:
            self.received += self.control.recv(RECEIVE_BYTES, socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass
        found = []
        while self.received:
            kind = self.received[:1]
            layout = {b"S": STARTED, b"E": ENDED, b"D": DONE}[kind]
            if len(self.received) < 1 + layout.size:
                break
            found.append((kind, layout.unpack(self.received[1 : 1 + layout.size])))
            self.received = self.received[1 + layout.size :]
        return found

    def lost(self) -> bool:
        """Whether the warden has ended (it never does while its executor lives)."""
        return bool(os.waitpid(self.pid, os.WNOHANG)[0])

    def replace(self) -> None:
        """A new warden, in place of one that ended or did not answer in time."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass  # already reaped (by `lost`)
        self.control.close()
        for fd in self.watch:
            os.close(fd)
        self.start()


def _end_orphans(place: "Place", main: int, own: set[int]) -> None:
    """End the container's processes that are not its own (its programs') until none is left, or
    GVISOR_REAP_SECONDS have passed (this is gVisor's path)."""
    deadline = time.monotonic() + GVISOR_REAP_SECONDS
    while other_pids(own) and time.monotonic() < deadline:
        place.end_programs(main, own)
        time.sleep(POLL_SECONDS / 4)
