"""Runs untrusted programs inside the sandbox container and reports a JSON verdict for each.

This file is sent into the container as the source of `python3 -I -c` (the image needs nothing of
ours baked in). A request is one JSON object:

    {"program": str, "seconds": float, "wall_seconds": float,
     "memory_bytes": int, "file_bytes": int}

and its answer one JSON line: {"status": "passed" | "failed" | "timed out", "reason": str,
"error": str, "returncode": int, "cpu_seconds": float, "wall_seconds": float,
"stdout_bytes": int, "stderr_tail": str, "residue": {what: count}}. `error` is the class name of
the exception that ended the program (`AssertionError`, `NameError`, `MemoryError`, ...), or ""
when none did (it passed, or ended without reporting: then `reason` says how).

Run with no argument, it answers the one request on stdin (one `docker exec` per program). Run as
`serve`, it answers one request per line of stdin until EOF, so a long-lived container runs many
programs through one process. With `local` (the unsafe `-T sandbox=local`, no container), it runs
programs as the user running the eval and cleans up only the program's own session and folder.

Privilege separation (in the container): the executor runs as root with no capability but the few
it needs to police programs (KILL, SETUID, SETGID, DAC_OVERRIDE, FOWNER; see compose.yaml); each
program runs as another user ("nobody") with none. So a program can neither signal, stop nor
trace its executor, nor read its pipes; its misdeeds can only be its own verdict.

Why a parent and a child: each program runs in a fresh child process, forked from this executor
before it has run any program (as the reference harness forks its workers), in a session of its
own; the parent decides the verdict, enforces the limits, and kills whatever the program left
behind. Forking an interpreter that has already started costs about a millisecond, where starting
a new one costs tens. The program passes only if the child's harness reports, on a private pipe and
with a per-run nonce, that `exec` of the whole program (tests included) returned normally: an early
`exit(0)`, `os._exit(0)`, `raise SystemExit` or printing a success marker is a fail, as in the
reference harness, whose `exec` treats any BaseException as a failure, and whose verdict for a
program that dies without reporting is "timed out".

After every program: every process of the programs' user is killed (zombies with live threads
included), the scratch areas are emptied (however deep, unwritable or oddly named their trees),
System V IPC objects are removed, and then all of that is checked. What could not be removed is the
answer's `residue`; the pool replaces a container whose residue is not empty.
"""

import builtins
import ctypes
import io
import json
import math
import os
import resource
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

# What the reference harness's `reliability_guard` disables before it runs a program. Disabled here
# too, so a completion that calls, say, `os.system` or `exit` fails here as it fails there (with
# the same message); containing hostile code is the sandbox's job, not this guard's.
REFERENCE_DISABLED = {
    builtins: ("exit", "quit", "help"),
    os: (
        "kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
        "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod",
        "fchown", "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir",
    ),
    shutil: ("rmtree", "move", "chown"),
    subprocess: ("Popen",),
}  # fmt: skip
REFERENCE_BLOCKED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")


class TimeoutException(Exception):  # the reference harness's name
    """Raised in the program when its time is up, as the reference's `time_limit` raises it."""


class WriteOnlyStringIO(io.StringIO):  # the reference harness's name: messages show it
    """The program's stdin, stdout and stderr (one object, as in the reference's `swallow_io`):
    reading fails with an empty OSError and `fileno` is unsupported, as there. What is written
    goes to the executor's stdout pipe rather than into memory, so output cannot exhaust it."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def write(self, text) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if not isinstance(text, str):
            raise TypeError(f"string argument expected, got '{type(text).__name__}'")
        data = text.encode("utf-8", "surrogateescape")
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            pass  # the program closed its stdout: in the reference, writes never fail here
        return len(text)

    def read(self, *args, **kwargs):
        raise OSError

    def readline(self, *args, **kwargs):
        raise OSError

    def readlines(self, *args, **kwargs):
        raise OSError

    def readable(self, *args, **kwargs) -> bool:
        return False


def _raise_timeout(signum, frame) -> None:
    raise TimeoutException("Timed out!")


def _child(program: str, nonce: str, request: dict, fds: dict[str, int], place) -> None:
    """In the forked child: identity, limits, then the program, exactly as the reference's
    `exec(check_program, {})`. Reports through the report FIFO: "P" + nonce after a normal
    return, "T" if its time ran out (TimeoutException), or "F" + the exception's class name +
    NUL + its text (what the reference prints after "failed: "). The FIFO is opened by its path
    only to report, so a program that closes or reuses every file descriptor still gets its
    verdict. Never returns."""
    # Kept before the program runs: it may replace what the module attributes point to.
    open_fd, write, exit_now, print_exception = os.open, os.write, os._exit, traceback.print_exc
    report_path = request["report"]

    def report(message: bytes) -> None:
        write(open_fd(report_path, os.O_WRONLY | os.O_NONBLOCK), message)

    code = 1
    try:
        os.setsid()
        place.become_program(request["scratch"])
        _set_dumpable(True)  # the program's own /proc entries behave as usual (see main)
        os.chdir(request["scratch"])
        sys.stdin.close()  # as in the reference's worker, where multiprocessing closed it
        null = os.open(os.devnull, os.O_RDONLY)
        for source, target in ((null, 0), (fds["stdout"], 1), (fds["stderr"], 2)):
            os.dup2(source, target)
        os.closerange(3, 65536)
        errors = open(2, "w", closefd=False)  # noqa: SIM115  (the traceback's way out)
        sys.stdin = sys.stdout = sys.stderr = WriteOnlyStringIO(1)
        # A safety net only: the parent ends the program on its own time first (see run).
        cpu = math.ceil(request["seconds"] + KILL_AFTER_ALARM_SECONDS) + 1
        for limit, value in (
            (resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_AS, (request["memory_bytes"],) * 2),
            (resource.RLIMIT_FSIZE, (request["file_bytes"],) * 2),
            (resource.RLIMIT_CORE, (0, 0)),
        ):
            resource.setrlimit(limit, value)
        os.environ.clear()
        os.environ.update(CHILD_ENVIRONMENT | {"HOME": request["scratch"]})
        for module, names in REFERENCE_DISABLED.items():
            for name in names:
                setattr(module, name, None)
        for module in REFERENCE_BLOCKED_MODULES:
            sys.modules[module] = None
        # The parent sends SIGALRM when the program's time is up; as in the reference, the
        # exception it raises can be caught by the program (a bare `except:` around a loop).
        signal.signal(signal.SIGALRM, _raise_timeout)
        try:
            exec(compile(program, "<string>", "exec"), {})  # noqa: S102  (the whole point)
        except TimeoutException:
            report(b"T")
        except BaseException as error:  # noqa: BLE001  (as the reference: any exception fails)
            try:
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
            code = 0
    finally:
        exit_now(code)


CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
}
STDERR_TAIL_BYTES = 4096
# A report fits in one atomic FIFO write (PIPE_BUF, 4096 bytes).
REPORT_TEXT_BYTES = 2000
ERROR_NAME_CHARACTERS = 200
REPORT_BYTES = 4096
POLL_SECONDS = 0.02
# After its TimeoutException, how long a program that caught it may go on before it is killed
# (the reference joins its worker for timeout + 1 s).
KILL_AFTER_ALARM_SECONDS = 1.0
# How long the pipes may stay open once everything that holds them has been killed.
DRAIN_SECONDS = 1.0
# How long the kernel and the container's init may take to reap the killed processes.
REAP_SECONDS = 2.0

# Writable places a program can leave files in (the root file system is read-only): /tmp (which
# holds each program's scratch folder), POSIX shared memory and POSIX message queues.
SCRATCH_AREAS = ("/tmp", "/dev/shm", "/dev/mqueue")
SYSV_IPC_TABLES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
# The container's CPU time used so far (cgroup v2, then v1), and its shared memory (tmpfs and IPC).
CGROUP_CPU = (
    ("/sys/fs/cgroup/cpu.stat", "usage_usec", 1e-6),
    ("/sys/fs/cgroup/cpuacct/cpuacct.usage", None, 1e-9),
    ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", None, 1e-9),
)
# How many processes of the container the kernel's out-of-memory killer has killed (cgroup v2,
# then v1).
CGROUP_OOM_KILLS = (
    ("/sys/fs/cgroup/memory.events", "oom_kill"),
    ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
)
CGROUP_SHMEM = (
    ("/sys/fs/cgroup/memory.stat", "shmem"),
    ("/sys/fs/cgroup/memory/memory.stat", "total_shmem"),
)
# Programs run as "nobody", the user the image's Dockerfile names.
PROGRAM_UID = PROGRAM_GID = 65534


def _read_counter(path: str, key: str | None) -> int | None:
    try:
        with open(path, "rb") as counters:
            text = counters.read().decode()
    except OSError:
        return None
    if key is None:
        return int(text)
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return None


def _first_counter(candidates) -> tuple | None:
    for candidate in candidates:
        if _read_counter(*candidate[:2]) is not None:
            return candidate
    return None


def _processes():
    """(pid, stat fields after the name, real uid) of every process but this one."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/status", "rb") as status:
                uid = next(int(line.split()[1]) for line in status if line.startswith(b"Uid:"))
        except (OSError, StopIteration):
            continue  # gone meanwhile
        yield int(entry), fields, uid


def _empty(paths: list[str]) -> None:
    """Remove files and trees, however deep (GNU rm walks them without recursion or long paths),
    unwritable (the executor may override permissions) or strangely named. Most programs leave
    only their empty scratch folder and report FIFO, which go without starting `rm`."""
    stubborn = []
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            stubborn.append(path)
    if stubborn:
        subprocess.run(
            ["rm", "-rf", "--one-file-system", "--", *stubborn],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


def _entries(area: str) -> list[str]:
    try:
        return [os.path.join(area, name) for name in os.listdir(area)]
    except FileNotFoundError:
        return []


class InContainer:
    """The sandbox container: programs run as another user, and after each the whole container
    is brought back to how it was before it, or its residue is reported."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            sys.exit(
                "executor.py must start as root in the sandbox container (the compose file's "
                "`user: 0:0` and `cap_add`): it runs programs as another user, whom it polices."
            )
        self.cpu_counter = _first_counter(CGROUP_CPU)
        self.shmem_counter = _first_counter(CGROUP_SHMEM)
        self.oom_counter = _first_counter(CGROUP_OOM_KILLS)
        self.shmem_baseline = self._shmem()

    def become_program(self, scratch: str) -> None:
        # Killed first when the container runs out of memory: a program, never its executor.
        with open("/proc/self/oom_score_adj", "w") as adjust:
            adjust.write("1000")
        os.setgroups([])
        os.setresgid(PROGRAM_GID, PROGRAM_GID, PROGRAM_GID)
        os.setresuid(PROGRAM_UID, PROGRAM_UID, PROGRAM_UID)  # every capability goes with root
        os.mkdir(scratch, 0o700)

    def is_stray(self, pid: int, fields: list[bytes], uid: int, program: int) -> bool:
        return uid == PROGRAM_UID

    def cpu_seconds(self, program: int) -> float:
        """CPU time used in the container so far, less this executor's own: the program's
        processes and threads wherever they are (they cannot leave the container's cgroup)."""
        if self.cpu_counter is None:
            return 0.0
        path, key, unit = self.cpu_counter
        return (_read_counter(path, key) or 0) * unit - time.process_time()

    def clean(self, paths: list[str]) -> None:
        _empty([path for area in SCRATCH_AREAS for path in _entries(area)])
        if any(_sysv_ipc_objects()):
            # Only an object's owner may remove it: remove the programs' as their user.
            subprocess.run(
                ["ipcrm", "--all"],
                user=PROGRAM_UID,
                group=PROGRAM_GID,
                extra_groups=[],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )

    def residue(self, scratch: str) -> dict[str, int]:
        return {
            "scratch entries": sum(len(_entries(area)) for area in SCRATCH_AREAS),
            "System V IPC objects": sum(_sysv_ipc_objects()),
            "shared memory bytes": max(0, self._shmem() - self.shmem_baseline),
        }

    def oom_kills(self) -> int:
        """Processes of the container killed by the out-of-memory killer so far."""
        return (_read_counter(*self.oom_counter) or 0) if self.oom_counter else 0

    def _shmem(self) -> int:
        return (_read_counter(*self.shmem_counter) or 0) if self.shmem_counter else 0


def _sysv_ipc_objects() -> list[int]:
    counts = []
    for table in SYSV_IPC_TABLES:
        try:
            with open(table, "rb") as rows:
                counts.append(max(0, len(rows.read().splitlines()) - 1))  # less the header
        except OSError:
            counts.append(0)
    return counts


class OnThisMachine:
    """`-T sandbox=local` (no container): programs run as the eval's user, and only the program's
    own session and scratch folder are cleaned up; a program that starts a session of its own
    escapes, one reason why local execution is an unsafe opt-in."""

    def become_program(self, scratch: str) -> None:
        os.mkdir(scratch, 0o700)

    def is_stray(self, pid: int, fields: list[bytes], uid: int, program: int) -> bool:
        return int(fields[3]) == program  # fields[3]: the session

    def cpu_seconds(self, program: int) -> float:
        """CPU time used so far by the program's session (its live processes and threads)."""
        ticks = sum(
            int(fields[11]) + int(fields[12])  # utime, stime
            for _, fields, _ in _processes()
            if int(fields[3]) == program
        )
        return ticks / os.sysconf("SC_CLK_TCK")

    def clean(self, paths: list[str]) -> None:
        _empty(paths)

    def residue(self, scratch: str) -> dict[str, int]:
        return {"scratch entries": int(os.path.lexists(scratch))}

    def oom_kills(self) -> int:
        return 0  # not told apart on this machine: a program killed by it is "killed"


def _kill_strays(place: InContainer | OnThisMachine, program: int) -> int:
    """Kill every process `place` calls a stray, zombies included (a zombie leader's threads may
    still run), until all are gone or REAP_SECONDS have passed; return how many are left.

    Repeated because a process may fork while the others are being killed; the container's pids
    limit bounds how many there can be, and each pass leaves fewer that can still fork. Killed
    processes are reaped by the container's init, or by this executor (its own child, `program`,
    which it waits for itself and so does not wait for here).
    """
    me = os.getpid()
    deadline = time.monotonic() + REAP_SECONDS
    while True:
        strays = [
            (pid, fields)
            for pid, fields, uid in _processes()
            if place.is_stray(pid, fields, uid, program)
        ]
        for pid, _ in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        left = [pid for pid, fields in strays if not (fields[0] == b"Z" and int(fields[1]) == me)]
        if not left or time.monotonic() > deadline:
            return len(left)
        time.sleep(0.002)


def run(request: dict, place: InContainer | OnThisMachine) -> dict:
    nonce = secrets.token_hex(16)
    names = secrets.token_hex(8)
    request = request | {
        "scratch": os.path.join(tempfile.gettempdir(), f"program-{names}"),
        "report": os.path.join(tempfile.gettempdir(), f"report-{names}"),
    }
    os.mkfifo(request["report"])
    os.chmod(request["report"], 0o622)  # the program's user may write its report
    # The FIFO is kept open for writing here too, so that reading it never meets its end.
    report_fds = (
        os.open(request["report"], os.O_RDONLY | os.O_NONBLOCK),
        os.open(request["report"], os.O_WRONLY),
    )
    pipes = {name: os.pipe() for name in ("stdout", "stderr")}
    oom_kills_before = place.oom_kills()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request["program"], nonce, request, {n: w for n, (_, w) in pipes.items()}, place)
    cpu_before = place.cpu_seconds(pid)
    for _, write_end in pipes.values():
        os.close(write_end)
    exited = _end_watch(pid)
    status: int | None = None
    usage = None

    token = b""
    stdout_bytes = 0
    stderr_tail = b""
    streams = {read_end: name for name, (read_end, _) in pipes.items()}
    deadline = started + request["wall_seconds"]
    alarmed = killed_for_time = False
    ended = False
    drained_by = math.inf
    while status is None or streams:
        out_of_time = False
        if status is None:
            waited, waited_status, waited_usage = os.wait4(pid, os.WNOHANG)
            if waited:
                status, usage = waited_status, waited_usage
            else:
                # The program's time: its own wall-clock time less its waits for a CPU, or the
                # CPU its processes and threads used, whichever is more (see _own_seconds).
                own = max(_own_seconds(pid, started), place.cpu_seconds(pid) - cpu_before)
                if not alarmed and own >= request["seconds"]:
                    os.kill(pid, signal.SIGALRM)
                    alarmed = True
                out_of_time = (
                    own >= request["seconds"] + KILL_AFTER_ALARM_SECONDS
                    or time.monotonic() > deadline
                )
        if not ended and (status is not None or out_of_time):
            # The program is over, or out of time: it and everything it started (even in a
            # session of its own, holding the pipes open) goes now, so the pipes reach EOF.
            killed_for_time = status is None
            ended = True
            _kill_strays(place, pid)
            drained_by = time.monotonic() + DRAIN_SECONDS
        elif ended and time.monotonic() > drained_by:
            break  # a process that escaped the cleanup still holds a pipe
        if status is not None and not streams:
            break
        watched = [*streams, report_fds[0], *(exited if status is None else [])]
        ready, _, _ = select.select(watched, [], [], POLL_SECONDS)
        for fd in ready:
            if fd in exited:
                continue  # wait4 at the top of the loop reaps it
            if fd == report_fds[0]:
                token = (token + _read_available(fd))[:REPORT_BYTES]
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                os.close(fd)
                del streams[fd]
            elif streams[fd] == "stdout":
                stdout_bytes += len(chunk)
            else:
                stderr_tail = (stderr_tail + chunk)[-STDERR_TAIL_BYTES:]
    if status is None:
        _, status, usage = os.wait4(pid, 0)
    token = (token + _read_available(report_fds[0]))[:REPORT_BYTES]
    returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    cpu = usage.ru_utime + usage.ru_stime
    for fd in [*streams, *report_fds, *exited]:
        os.close(fd)

    # Nothing of the program may be left for the next one: what could not be removed is residue.
    left = _kill_strays(place, pid)
    place.clean([request["scratch"], request["report"]])
    residue = {"processes": left} | place.residue(request["scratch"])

    stderr_text = stderr_tail.decode("utf-8", errors="replace")
    error = ""
    if token == b"P" + nonce.encode():
        status, reason = "passed", ""
    elif (
        token == b"T"
        or killed_for_time
        # The CPU-time safety net: SIGXCPU at its soft limit, SIGKILL at its hard one.
        or returncode == -signal.SIGXCPU
        or (returncode == -signal.SIGKILL and cpu >= request["seconds"])
    ):
        status, reason = "timed out", f"time limit of {request['seconds']:g}s"
    elif token.startswith(b"F"):
        # The class name, NUL, the text; a report without a NUL (one a program wrote to the
        # FIFO itself) is all text, as before classes were reported.
        kind, _, message = token[1:].partition(b"\0") if b"\0" in token else (b"", b"", token[1:])
        status, reason = "failed", message.decode("utf-8", errors="replace")
        error = kind.decode("utf-8", errors="replace")
    else:
        # It ended without reporting: the reference's verdict for that is "timed out" (its
        # result list stays empty); the reason says what really happened.
        out_of_memory = returncode == -signal.SIGKILL and place.oom_kills() > oom_kills_before
        status = "timed out"
        reason = _ended_without_report(returncode, stderr_text, out_of_memory)
    return {
        "status": status,
        "reason": reason,
        "error": error,
        "returncode": returncode,
        "cpu_seconds": round(cpu, 4),
        "wall_seconds": round(wall, 4),
        "stdout_bytes": stdout_bytes,
        "stderr_tail": stderr_text,
        "residue": {what: count for what, count in residue.items() if count},
    }


def _end_watch(pid: int) -> list[int]:
    """A descriptor that becomes readable when the process ends (a pidfd), so that its end wakes
    the loop at once; none on kernels older than 5.3, where the loop finds it within a poll."""
    try:
        return [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        return []


def _read_available(fd: int) -> bytes:
    """What the non-blocking report FIFO holds now."""
    data = b""
    while len(data) < REPORT_BYTES:
        try:
            chunk = os.read(fd, REPORT_BYTES)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _own_seconds(pid: int, started: float) -> float:
    """The time the program's main thread has had so far: wall-clock time since it started, less
    the time it spent waiting for a CPU (the kernel's run delay, /proc/<pid>/schedstat, in
    nanoseconds).

    On an idle machine that is its wall-clock time, the reference harness's measure; on a busy
    one it does not grow while the program waits for a core, so load cannot make it time out.
    A wait that the program causes itself (its own processes or threads keeping the CPU busy, a
    lowered priority) is bounded by the CPU those use, which `run` counts as well.
    """
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as schedstat:
            run_delay = int(schedstat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        run_delay = 0.0
    return time.monotonic() - started - run_delay


def _ended_without_report(returncode: int, stderr_text: str, out_of_memory: bool) -> str:
    if out_of_memory:
        return "killed by the out-of-memory killer (signal SIGKILL) before the tests completed"
    if returncode < 0:
        return f"killed by signal {_signal_name(-returncode)} before the tests completed"
    lines = [line for line in stderr_text.splitlines() if line.strip()]
    ending = f"; stderr ends: {lines[-1]}" if lines else ""
    return f"exited with code {returncode} before the tests completed{ending}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals have no name of their own
        return f"SIGRTMIN+{number - signal.SIGRTMIN}" if number >= signal.SIGRTMIN else str(number)


PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def _set_dumpable(dumpable: bool) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def main() -> None:
    arguments = sys.argv[1:]
    if "local" in arguments:
        place: InContainer | OnThisMachine = OnThisMachine()
    elif os.path.exists("/.dockerenv"):
        place = InContainer()
    else:
        # It kills every process of the programs' user: outside a container, someone else's.
        sys.exit("executor.py runs only inside the sandbox container (or with `local`).")
    # Not dumpable, its /proc/<pid>/fd and mem are closed to every other process, even one of its
    # own user (the `local` case): a program cannot open the executor's stdout
    # (`/proc/<ppid>/fd/1`) to write a verdict line of its own, nor its stdin to send requests.
    _set_dumpable(False)
    if "serve" in arguments:
        for line in sys.stdin:
            print(json.dumps(run(json.loads(line), place)), flush=True)
    else:
        print(json.dumps(run(json.loads(sys.stdin.read()), place)), flush=True)


if __name__ == "__main__":
    main()
