"""Runs untrusted programs inside the sandbox container and reports a JSON verdict for each.

This file is sent into the container as the source of `python3 -I -c` (the image needs nothing of
ours baked in). A request is one JSON object:

    {"program": str, "seconds": float, "wall_seconds": float,
     "memory_bytes": int, "file_bytes": int}

and its answer one JSON line: {"status": "passed" | "failed" | "timed out", "reason": str,
"returncode": int, "cpu_seconds": float, "wall_seconds": float, "stdout_bytes": int,
"stderr_tail": str}.

Run with no argument, it answers the one request on stdin (one `docker exec` per program). Run as
`serve`, it answers one request per line of stdin until EOF, so a long-lived container runs many
programs through one process. Either way, after each program it kills every process the program
left in the container and empties the writable scratch areas, so nothing survives into the next.
With `local` (the unsafe `-T sandbox=local`, no container), it cleans up only the program's own
session and scratch folder.

Why a parent and a child: each program runs in a fresh child process, forked from this executor
before it has run any program (as the reference harness forks its workers), in a session of its
own; the parent decides the verdict, enforces the limits, and kills whatever the program left
behind. Forking an interpreter that has already started costs about a millisecond, where starting
a new one costs tens. The program passes only if the child's harness reports, on a private pipe and
with a per-run nonce, that `exec` of the whole program (tests included) returned normally: an early
`exit(0)`, `os._exit(0)`, `raise SystemExit` or printing a success marker is a fail, as in the
reference harness, whose `exec` treats any BaseException as a failure.
"""

import builtins
import ctypes
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


def _raise_timeout(signum, frame) -> None:
    raise TimeoutException("Timed out!")


def _child(program: str, nonce: str, request: dict, fds: dict[str, int], scratch: str) -> None:
    """In the forked child: limits, then the program, exactly as the reference's
    `exec(check_program, {})`. Reports on the private pipe: "P" + nonce after a normal return,
    "T" if its time ran out (TimeoutException), or "F" + the exception's text (what the reference
    prints after "failed: "). Never returns."""
    # Kept before the program runs: it may replace what the module attributes point to.
    report, exit_now, print_exception = os.write, os._exit, traceback.print_exc
    code = 1
    try:
        _set_dumpable(True)  # the program's own /proc entries behave as usual (see main)
        os.setsid()
        os.chdir(scratch)
        null = os.open(os.devnull, os.O_RDONLY)
        for source, target in ((null, 0), (fds["stdout"], 1), (fds["stderr"], 2)):
            os.dup2(source, target)
        token = fds["token"]
        os.closerange(3, token)
        os.closerange(token + 1, 65536)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115  (stdin reads at EOF, as in the reference)
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
        os.environ.update(CHILD_ENVIRONMENT | {"HOME": scratch})
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
            report(token, b"T")
        except BaseException as error:  # noqa: BLE001  (as the reference: any exception fails)
            print_exception()
            try:
                message = str(error)
            except BaseException:  # noqa: BLE001  (a program's exception may not print)
                message = type(error).__name__
            report(token, b"F" + message.encode("utf-8", "replace")[:2000])
        else:
            report(token, b"P" + nonce.encode())
            code = 0
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001, S110  (the program may have broken them)
                pass
    finally:
        exit_now(code)


CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
}
STDERR_TAIL_BYTES = 4096
POLL_SECONDS = 0.02
# After its TimeoutException, how long a program that caught it may go on before it is killed
# (the reference joins its worker for timeout + 1 s).
KILL_AFTER_ALARM_SECONDS = 1.0
# How long the pipes may stay open once everything that holds them has been killed.
DRAIN_SECONDS = 1.0


# Writable places a program can leave files in (the root file system is read-only).
SCRATCH_AREAS = ("/tmp", "/dev/shm")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _container_keepers() -> set[int]:
    """Processes never killed: the container's init and main command (its two oldest processes)
    and this executor's ancestors (such as a `timeout` wrapper of the exec)."""
    pids = sorted(int(entry) for entry in os.listdir("/proc") if entry.isdigit())
    keepers = set(pids[:2])
    pid = os.getppid()
    while pid > 0:
        keepers.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                pid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            break
    return keepers - {os.getpid()}


class InContainer:
    """Cleanup in the sandbox container: every process but the keepers goes, and the writable
    scratch areas are emptied, so nothing at all survives into the next program."""

    def __init__(self) -> None:
        self.keepers = _container_keepers()

    def is_stray(self, pid: int, session: int, program: int) -> bool:
        return pid not in self.keepers

    def clean_files(self, scratch: str) -> None:
        _empty_scratch_areas()


class OnThisMachine:
    """Cleanup for `-T sandbox=local` (no container): only the program's own session and its
    scratch folder; a program that starts a session of its own escapes, one reason why local
    execution is an unsafe opt-in."""

    def is_stray(self, pid: int, session: int, program: int) -> bool:
        return session == program

    def clean_files(self, scratch: str) -> None:
        shutil.rmtree(scratch, ignore_errors=True)


def _kill_strays(cleanup: InContainer | OnThisMachine, program: int) -> None:
    """Kill every process the cleanup calls a stray (never this one), until none is left.

    Repeated because a process may fork while the others are being killed; the container's pids
    limit bounds how many there can be, and each pass leaves fewer that can still fork.
    """
    me = os.getpid()
    for _ in range(100):
        strays = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            # fields: state, ppid, process group, session, ...; a zombie is already dead.
            if fields[0] != b"Z" and cleanup.is_stray(int(entry), int(fields[3]), program):
                strays.append(int(entry))
        if not strays:
            return
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.002)


def _empty_scratch_areas() -> None:
    for area in SCRATCH_AREAS:
        try:
            entries = os.listdir(area)
        except OSError:
            continue
        for entry in entries:
            path = os.path.join(area, entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


def run(request: dict, cleanup: InContainer | OnThisMachine) -> dict:
    nonce = secrets.token_hex(16)
    scratch = tempfile.mkdtemp(prefix="program-")
    pipes = {name: os.pipe() for name in ("stdout", "stderr", "token")}
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request["program"], nonce, request, {n: w for n, (_, w) in pipes.items()}, scratch)
    for _, write_end in pipes.values():
        os.close(write_end)
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
    while streams:
        out_of_time = False
        if status is None:
            waited, waited_status, waited_usage = os.wait4(pid, os.WNOHANG)
            if waited:
                status, usage = waited_status, waited_usage
            else:
                own = _own_seconds(pid, started)
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
            _kill_group(pid)
            _kill_strays(cleanup, pid)
            drained_by = time.monotonic() + DRAIN_SECONDS
        elif ended and time.monotonic() > drained_by:
            break  # a process that escaped the cleanup (local only) still holds a pipe
        ready, _, _ = select.select(list(streams), [], [], POLL_SECONDS)
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                os.close(fd)
                del streams[fd]
            elif streams[fd] == "stdout":
                stdout_bytes += len(chunk)
            elif streams[fd] == "stderr":
                stderr_tail = (stderr_tail + chunk)[-STDERR_TAIL_BYTES:]
            elif len(token) < 4096:
                token += chunk
    if status is None:
        _, status, usage = os.wait4(pid, 0)
    returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    cpu = usage.ru_utime + usage.ru_stime
    for read_end in streams:
        os.close(read_end)
    cleanup.clean_files(scratch)

    stderr_text = stderr_tail.decode("utf-8", errors="replace")
    if token == b"P" + nonce.encode() and returncode == 0:
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
        status, reason = "failed", token[1:].decode("utf-8", errors="replace")
    else:
        status, reason = "failed", _failure_reason(returncode, stderr_text)
    return {
        "status": status,
        "reason": reason,
        "returncode": returncode,
        "cpu_seconds": round(cpu, 4),
        "wall_seconds": round(wall, 4),
        "stdout_bytes": stdout_bytes,
        "stderr_tail": stderr_text,
    }


def _own_seconds(pid: int, started: float) -> float:
    """The time the program has had so far: wall-clock time since it started, less the time it
    spent waiting for a CPU (the kernel's run delay, /proc/<pid>/schedstat, in nanoseconds).

    On an idle machine that is its wall-clock time, the reference harness's measure; on a busy
    one it does not grow while the program waits for a core, so load cannot make it time out.
    """
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as schedstat:
            run_delay = int(schedstat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        run_delay = 0.0
    return time.monotonic() - started - run_delay


def _failure_reason(returncode: int, stderr_text: str) -> str:
    lines = [line for line in stderr_text.splitlines() if line.strip()]
    if returncode < 0:
        return f"killed by signal {signal.Signals(-returncode).name}"
    if returncode == 0:
        return "exited before the tests completed"
    return lines[-1] if lines else f"exit code {returncode}"


PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def _set_dumpable(dumpable: bool) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def main() -> None:
    arguments = sys.argv[1:]
    if "local" in arguments:
        cleanup: InContainer | OnThisMachine = OnThisMachine()
    elif os.path.exists("/.dockerenv"):
        cleanup = InContainer()
    else:
        # It kills every other process it may signal: outside a container, the user's.
        sys.exit("executor.py runs only inside the sandbox container (or with `local`).")
    # Programs run as the same user as this executor. Not dumpable, its /proc/<pid>/fd and mem
    # are closed to them: a program cannot open the executor's stdout (`/proc/<ppid>/fd/1`) to
    # write a verdict line of its own, nor its stdin to send requests.
    _set_dumpable(False)
    if "serve" in arguments:
        for line in sys.stdin:
            print(json.dumps(run(json.loads(line), cleanup)), flush=True)
    else:
        print(json.dumps(run(json.loads(sys.stdin.read()), cleanup)), flush=True)


if __name__ == "__main__":
    main()
