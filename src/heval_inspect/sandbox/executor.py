"""Runs untrusted programs inside the sandbox container and reports a JSON verdict for each.

This file is sent into the container as the source of `python3 -I -c` (the image needs nothing of
ours baked in). A request is one JSON object:

    {"program": str, "cpu_seconds": float, "wall_seconds": float,
     "memory_bytes": int, "file_bytes": int}

and its answer one JSON line: {"status": "passed" | "failed" | "timed out", "reason": str,
"returncode": int, "cpu_seconds": float, "wall_seconds": float, "stdout_bytes": int,
"stderr_tail": str}.

Run with no argument, it answers the one request on stdin (one `docker exec` per program). Run as
`serve`, it answers one request per line of stdin until EOF, so a long-lived container runs many
programs through one process. Either way, after each program it kills every process the program
left in the container and empties the writable scratch areas, so nothing survives into the next.

Why a parent and a child: the program runs in a child process of its own session, so this parent
(which the program cannot reach) decides the verdict, enforces the limits, and kills whatever the
program left behind. The program passes only if the child's harness reports, on a private pipe and
with a per-run nonce, that `exec` of the whole program (tests included) returned normally: an early
`exit(0)`, `os._exit(0)`, `raise SystemExit` or printing a success marker is a fail, as in the
reference harness, whose `exec` treats any BaseException as a failure.
"""

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
import threading
import time

# The child: sets its limits, reads the nonce and the program from stdin, detaches stdin (so
# `input()` fails as in the reference harness), disables what the reference harness's
# `reliability_guard` disables (so a completion that calls, say, `os.system` or `exit` fails here
# as it fails there; containment is the sandbox's job, not this guard's), then executes the
# program with fresh globals, exactly as the reference's `exec(check_program, {})`. It reports on
# the private pipe: "P" + nonce after a normal return, or "F" + the exception's text, which is what
# the reference prints after "failed: ".
CHILD = r"""
import os, resource, sys
REFERENCE_DISABLED = {
    "builtins": ("exit", "quit", "help"),
    "os": ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid",
           "fork", "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink",
           "fchmod", "fchown", "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown",
           "getcwd", "chdir"),
    "shutil": ("rmtree", "move", "chown"),
    "subprocess": ("Popen",),
}
REFERENCE_BLOCKED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")
def _harness():
    token_fd, cpu_seconds, memory_bytes, file_bytes = (int(arg) for arg in sys.argv[1:5])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nonce = sys.stdin.readline().strip()
    source = sys.stdin.read()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    report, exit_now = os.write, os._exit
    for module, names in REFERENCE_DISABLED.items():
        target = __import__(module)
        for name in names:
            setattr(target, name, None)
    for module in REFERENCE_BLOCKED_MODULES:
        sys.modules[module] = None
    try:
        exec(compile(source, "<string>", "exec"), {})
    except BaseException as error:
        import traceback
        traceback.print_exc()
        try:
            message = str(error)
        except BaseException:
            message = type(error).__name__
        report(token_fd, b"F" + message.encode("utf-8", "replace")[:2000])
        code = 1
    else:
        report(token_fd, b"P" + nonce.encode())
        code = 0
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass
    exit_now(code)
_harness()
"""

STDERR_TAIL_BYTES = 4096
POLL_SECONDS = 0.02


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


def _kill_strays(keepers: set[int]) -> None:
    """Kill every process but the keepers and this one, until none is left.

    Repeated because a process may fork while the others are being killed; the container's pids
    limit bounds how many there can be, and each pass leaves fewer that can still fork.
    """
    me = os.getpid()
    for _ in range(100):
        strays = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in keepers or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    state = stat.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if state != b"Z":  # a zombie is already dead; init reaps it
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


def run(request: dict, keepers: set[int]) -> dict:
    nonce = secrets.token_hex(16)
    scratch = tempfile.mkdtemp(prefix="program-")
    token_read, token_write = os.pipe()
    started = time.monotonic()
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-c",
            CHILD,
            str(token_write),
            # RLIMIT_CPU counts whole seconds.
            str(max(1, math.ceil(request["cpu_seconds"]))),
            str(request["memory_bytes"]),
            str(request["file_bytes"]),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(token_write,),
        cwd=scratch,
        env={
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": scratch,
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
        },
        start_new_session=True,
    )
    os.close(token_write)

    # Feed stdin from a thread: a program larger than the pipe buffer must not block the reads.
    def feed() -> None:
        try:
            child.stdin.write((nonce + "\n" + request["program"]).encode())
            child.stdin.close()
        except OSError:
            pass

    threading.Thread(target=feed, daemon=True).start()

    token = b""
    stdout_bytes = 0
    stderr_tail = b""
    streams = {
        child.stdout.fileno(): "stdout",
        child.stderr.fileno(): "stderr",
        token_read: "token",
    }
    deadline = started + request["wall_seconds"]
    timed_out_wall = False
    ended = False
    while streams:
        if not ended and (child.poll() is not None or time.monotonic() > deadline):
            # The program is over, or out of time: it and everything it started (even in a
            # session of its own, holding the pipes open) goes now, so the pipes reach EOF.
            timed_out_wall = child.poll() is None
            ended = True
            _kill_group(child.pid)
            _kill_strays(keepers)
        ready, _, _ = select.select(list(streams), [], [], POLL_SECONDS)
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                del streams[fd]
            elif streams[fd] == "stdout":
                stdout_bytes += len(chunk)
            elif streams[fd] == "stderr":
                stderr_tail = (stderr_tail + chunk)[-STDERR_TAIL_BYTES:]
            elif len(token) < 4096:
                token += chunk
    os.close(token_read)
    returncode = child.wait()
    wall = time.monotonic() - started
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (usage_after.ru_utime + usage_after.ru_stime) - (
        usage_before.ru_utime + usage_before.ru_stime
    )
    _empty_scratch_areas()

    stderr_text = stderr_tail.decode("utf-8", errors="replace")
    if token == b"P" + nonce.encode() and returncode == 0:
        status, reason = "passed", ""
    elif timed_out_wall:
        status, reason = "timed out", f"wall-clock limit of {request['wall_seconds']:g}s"
    elif returncode in (-signal.SIGXCPU, -signal.SIGKILL) and cpu >= int(request["cpu_seconds"]):
        status, reason = "timed out", f"CPU-time limit of {request['cpu_seconds']:g}s"
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


def _failure_reason(returncode: int, stderr_text: str) -> str:
    lines = [line for line in stderr_text.splitlines() if line.strip()]
    if returncode < 0:
        return f"killed by signal {signal.Signals(-returncode).name}"
    if returncode == 0:
        return "exited before the tests completed"
    return lines[-1] if lines else f"exit code {returncode}"


def main() -> None:
    # It kills every other process it may signal: outside a container that would be the user's.
    if not os.path.exists("/.dockerenv"):
        sys.exit("executor.py runs only inside the sandbox container.")
    keepers = _container_keepers()
    if sys.argv[1:] == ["serve"]:
        for line in sys.stdin:
            print(json.dumps(run(json.loads(line), keepers)), flush=True)
    else:
        print(json.dumps(run(json.loads(sys.stdin.read()), keepers)), flush=True)


if __name__ == "__main__":
    main()
