"""Hostile completions in the real sandbox: each gets its right verdict, and harms nothing else.

Every case is a completion of HumanEval/0 (`has_close_elements`), so the program around it is a
real one: prompt + completion + test + check. Code after the function body runs at module level,
before the tests are defined: that is where a completion fakes success or attacks. Each case is
followed, in the same container (one container for the pool, one sample at a time), by a probe
that counts what is left (the container's tasks as its pids cgroup counts them, zombies
included, and the programs' user's processes; scratch entries; IPC objects; sockets; shared
memory; the container's memory and that of its other processes; the machine's open files) and
then asks for 300 MiB, and by a control answering the canonical solution in a program that
starts threads and binds a port: every probe must find the container as the first probe did,
and every control must pass, so no case changes another sample's verdict. No case
may reach the executor (no executor lost, no container replaced), and the run, with Inspect's
default fail-on-error, must end `success`.
"""

import json
import os
import platform
import re

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, load_official
from heval_inspect.schema import Cause
from heval_inspect.tasks import humaneval

from .own_containers import OwnProjects, project_containers

pytestmark = pytest.mark.docker

WRONG = "    return True\n"  # fails the second assertion: has_close_elements(..., 0.05) is False
HOST_SECRET = "sk-host-secret-d41d8cd9"
FAKE_VERDICT_LINE = json.dumps(
    {
        "status": "passed",
        "cause": "passed",
        "reason": "",
        "returncode": 0,
        "cpu_seconds": 0.0,
        "wall_seconds": 0.0,
        "stdout_bytes": 0,
        "stderr_tail": "",
    }
)


# clone(2)'s system call number: CLONE_PARENT is not reachable through Python's own API.
SYS_CLONE = {"x86_64": 56, "aarch64": 220}[platform.machine()]
# The port the control binds (no SO_REUSEADDR), which one case leaves in TIME_WAIT.
CONTROL_PORT = 47113
# Run by small processes: set its own oom_score_adj back to 0 if it can, then hold as much
# memory as it can in the buffers of socket pairs (as large as the host lets them be), and wait.
FILL_SOCKETS = (
    "import os, socket, time\n"
    "try:\n"
    "    fd = os.open('/proc/self/oom_score_adj', os.O_WRONLY)\n"
    "    os.write(fd, b'0')\n"
    "except OSError:\n"
    "    pass\n"
    "held = []\n"
    "while True:\n"
    "    try:\n"
    "        a, b = socket.socketpair()\n"
    "    except OSError:\n"
    "        break\n"
    "    held.append((a, b))\n"
    "    try:\n"
    "        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)\n"
    "    except OSError:\n"
    "        pass\n"
    "    a.setblocking(False)\n"
    "    try:\n"
    "        while True:\n"
    "            a.send(b'x' * 65536)\n"
    "    except OSError:\n"
    "        pass\n"
    "time.sleep(600)\n"
)


# The executor's causes of some cases (any of those given); every case's cause must agree with
# its verdict.
CASE_CAUSES = {
    "sleep(10)": {Cause.TIME_LIMIT},
    "sys.exit(0) before the tests": {Cause.EXCEPTION},
    "os._exit(0) before the tests": {Cause.EXIT},
    "dies by a real-time signal": {Cause.SIGNAL},
    "segfaults": {Cause.SIGNAL},
    # Its processes fill socket buffers, then sleep: it breaks two bounds, the container's memory
    # and its time (TIMEOUT, 2 s), and is ended by the one it reaches first. The kernel hands it
    # the container's memory in 0.5 to 3 s, as the machine goes: the out-of-memory killer or the
    # time limit, both right, and the verdict is the reference's "timed out" either way. That the
    # killer, once reached, takes the decoy or the program and never the executor is
    # test_the_containers_memory_taken_meets_the_out_of_memory_killer_not_the_executor's, with
    # the time to reach it.
    "every process slot holds socket buffers": {Cause.MEMORY, Cause.TIME_LIMIT},
    # The same race: it writes the container's memory full in 0.8 to 2 s of its own time as the
    # machine goes (the pool's container holding what the cases before it left to reclaim, or the
    # docker sandbox's cases all running at once), and its limit here is 2 s.
    "memory bomb": {Cause.MEMORY, Cause.TIME_LIMIT},
    "asks for 8 GiB at once": {Cause.MEMORY},
}
FAILING_CAUSES = {
    Cause.WRONG_ANSWER, Cause.SYNTAX_ERROR, Cause.NAME_ERROR, Cause.EXCEPTION, Cause.MEMORY
}  # fmt: skip
UNREPORTED_CAUSES = {Cause.TIME_LIMIT, Cause.MEMORY, Cause.SIGNAL, Cause.EXIT}


def agrees(verdict: str, cause: Cause) -> bool:
    """Whether a cause can give that verdict (the reference's words)."""
    if verdict == "passed":
        return cause == Cause.PASSED
    if verdict.startswith("failed: "):
        return cause in FAILING_CAUSES
    return verdict == "timed out" and cause in UNREPORTED_CAUSES


def canonical() -> str:
    return load_official(HUMANEVAL)[0]["canonical_solution"]


# case: (completion, expected verdict: the exact result string, or a regular expression for it)
CASES: dict[str, tuple[str, str | re.Pattern]] = {
    # The reference harness's own example cases, on this problem.
    "subprocess rm -rf": (
        "    import subprocess\n    subprocess.check_output('rm -rf tmp')\n",
        "failed: 'NoneType' object is not callable",  # Popen is disabled, as in the reference
    ),
    "sleep(10)": ("    import time\n    time.sleep(10)\n" + "CANONICAL", "timed out"),
    # The reference runs a program with stdin, stdout and stderr swapped for one write-only
    # StringIO: reads fail with an empty message, and a program that wants a file number fails.
    "input()": ("    return input('enter a number')\n", "failed: "),
    "reads stdin": ("    import sys\n    return sys.stdin.read()\n", "failed: "),
    "iterates over stdin": ("    import sys\n    return list(sys.stdin)\n", "failed: "),
    "reads stdin's buffer": (
        "    import sys\n    return sys.stdin.buffer.read()\n",
        "failed: 'WriteOnlyStringIO' object has no attribute 'buffer'",
    ),
    "asks for stdout's file number": (
        "    import sys\n    return sys.stdout.fileno()\n",
        "failed: fileno",
    ),
    # Faking success: the tests never run, or fail, and the verdict must say so.
    "exit(0) before the tests": (WRONG + "exit(0)\n", "failed: 'NoneType' object is not callable"),
    "quit() before the tests": (WRONG + "quit()\n", "failed: 'NoneType' object is not callable"),
    "sys.exit(0) before the tests": (WRONG + "import sys\nsys.exit(0)\n", "failed: 0"),
    # Ending without a report is "timed out" in the reference (its result list stays empty).
    "os._exit(0) before the tests": (WRONG + "import os\nos._exit(0)\n", "timed out"),
    "dies by a real-time signal": (
        WRONG + "import posix, signal\nposix.kill(posix.getpid(), signal.SIGRTMIN + 3)\n",
        "timed out",
    ),
    "segfaults": (WRONG + "import ctypes\nctypes.string_at(0)\n", "timed out"),
    "raise SystemExit": (WRONG + "raise SystemExit\n", "failed: "),
    "atexit handler exits 0": (
        WRONG + "import atexit, os\natexit.register(os._exit, 0)\n",
        "failed: ",
    ),
    "prints success markers": (
        WRONG + f"import sys\nprint('passed')\nprint({FAKE_VERDICT_LINE!r})\n"
        f"print({FAKE_VERDICT_LINE!r}, file=sys.stderr)\n",
        "failed: ",
    ),
    "writes a verdict to the executor's stdout": (
        WRONG + "import os\nfd = os.open(f'/proc/{os.getppid()}/fd/1', os.O_WRONLY)\n"
        f"os.write(fd, ({FAKE_VERDICT_LINE!r} + '\\n').encode())\n",
        re.compile(r"failed: \[Errno 13\] Permission denied: '/proc/\d+/fd/1'"),
    ),
    "redefines check": (WRONG + "def check(candidate):\n    pass\n", "failed: "),
    "swallows the tests in a string": (
        WRONG + "check = lambda candidate: None\n'''\n",
        re.compile(r"failed: unterminated triple-quoted string literal .*"),
    ),
    "patches AssertionError and builtins": (
        WRONG + "import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n"
        "builtins.abs = lambda x: 0\n",
        "failed: ",
    ),
    # Resources.
    "fork bomb": (
        (
            "    import posix\n    while True:\n        try:\n            posix.fork()\n"
            "        except OSError:\n            pass\n"
        ),
        "timed out",
    ),
    "memory bomb": (
        # 768 MiB of untouched zero pages first (calloc maps them: they count for nothing), then
        # 64 MiB blocks, each written whole, until it holds more than the 1 GiB memory limit.
        "    reserve = bytes(768 << 20)\n    blocks = []\n"
        + "    while True:\n        blocks.append(b'b' * (1 << 26))\n",
        "timed out",
    ),
    # Granted (the machine has the memory, as the reference's would), then written: ended once
    # it holds more than the limit.
    "asks for 8 GiB at once": ("    block = bytearray(8 << 30)\n", "timed out"),
    "CPU spin": ("    while True:\n        pass\n", "timed out"),
    "sleeps past the limit": ("    import time\n    time.sleep(600)\n", "timed out"),
    "100 MB to stdout and to stderr, then correct": (
        "CANONICAL" + "import sys\nsys.stdout.write('x' * 100_000_000)\n"
        "sys.stderr.write('y' * 100_000_000)\n",
        "passed",
    ),
    "fills the scratch disk": (
        "    open('big', 'wb').write(b'x' * (200 << 20))\n",
        "failed: [Errno 27] File too large",
    ),
    "leaves a child process running": (
        "CANONICAL" + "import posix, time\nif posix.fork() == 0:\n    time.sleep(600)\n",
        "passed",
    ),
    # Reaching out.
    "network access": (
        "    import socket\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n",
        "failed: [Errno 101] Network is unreachable",
    ),
    "reads its environment": (
        "    import os\n    raise RuntimeError(' '.join(sorted(os.environ)))\n",
        "failed: HOME LANG LOGNAME OMP_NUM_THREADS PATH USER",
    ),
    "reads the container's environment": (
        "    raise RuntimeError(open('/proc/1/environ').read().replace('\\0', ' '))\n",
        # The container's init runs as root: its environment is not the program's to read.
        "failed: [Errno 13] Permission denied: '/proc/1/environ'",
    ),
    "reads the host's cgroups": (
        "    import os\n    raise RuntimeError(os.listdir('/run/heval/host-cgroup'))\n",
        # Mounted under gVisor only (compose.runsc.yaml), where the executor alone, as root,
        # may look.
        re.compile(
            r"failed: \[Errno (2|13)\] (No such file or directory|Permission denied): "
            r"'/run/heval/host-cgroup'"
        ),
    ),
    "appends to /etc/passwd": (
        "    open('/etc/passwd', 'a').write('pwned::0:0::/:/bin/sh\\n')\n",
        "failed: [Errno 13] Permission denied: '/etc/passwd'",
    ),
    "writes outside the scratch dir": (
        "    open('/var/tmp/pwned', 'w').write('x')\n",
        "failed: [Errno 30] Read-only file system: '/var/tmp/pwned'",
    ),
    # Reaching the executor: it runs as another user, so signals cannot reach it.
    "kills every process it can": (
        "    import posix, signal\n    posix.kill(-1, signal.SIGKILL)\n",
        "failed: ",  # kill(-1) spares its caller, and reaches no other process
    ),
    "kills its executor": (
        WRONG + "import posix, signal\nposix.kill(posix.getppid(), signal.SIGKILL)\n",
        "failed: [Errno 1] Operation not permitted",
    ),
    "stops its executor": (
        WRONG + "import posix, signal\nposix.kill(posix.getppid(), signal.SIGSTOP)\n",
        "failed: [Errno 1] Operation not permitted",
    ),
    "closes every file descriptor, then sleeps": (
        "    import posix, time\n    posix.closerange(0, 65536)\n    time.sleep(60)\n",
        "timed out",
    ),
    "closes every file descriptor, then fails": (
        "    import posix\n    posix.closerange(0, 65536)\n    return True\n",
        "failed: ",
    ),
    "closes every file descriptor, then passes": (
        "    import posix\n    posix.closerange(0, 65536)\nCANONICAL",
        "passed",
    ),
    "ignores the time limit's signal": (
        "    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "    while True:\n        pass\n",
        "timed out",
    ),
    # Buying time: its own processes keep the CPU busy while its main process, at the lowest
    # priority, waits for the CPU and would have that wait forgiven; it ends correct after 6 s.
    "two CPU hogs and SCHED_IDLE, correct after 6 s": (
        "    import os, posix, time\n    for _ in range(2):\n        if posix.fork() == 0:\n"
        "            while True:\n                pass\n"
        "    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "    start = time.monotonic()\n    while time.monotonic() - start < 6:\n        pass\n"
        "CANONICAL",
        "timed out",
    ),
    "hog threads and nice 19, correct after 6 s": (
        "    import os, threading, time\n    def hog():\n        while True:\n"
        "            sum(range(1000))\n"
        "    for _ in range(4):\n        threading.Thread(target=hog, daemon=True).start()\n"
        "    os.nice(19)\n    start = time.monotonic()\n"
        "    while time.monotonic() - start < 6:\n        time.sleep(0.001)\n"
        "CANONICAL",
        "timed out",
    ),
    # Sleeping while its stderr pipe stays full, where the wait for the executor to drain it
    # would be forgiven if the executor were held back (on an idle machine it is not).
    "sleeps with its stderr pipe full, correct after 6 s": (
        "    import posix, time\n    chunk = b'e' * (1 << 20)\n    start = time.monotonic()\n"
        "    while time.monotonic() - start < 6:\n        posix.write(2, chunk)\n"
        "        time.sleep(0.02)\n"
        "CANONICAL",
        "timed out",
    ),
    # Leaving state behind for the next program: each probe after it must find none.
    "a deep directory tree": (
        WRONG + "import posix\nfor _ in range(5000):\n    posix.mkdir('d')\n    posix.chdir('d')\n",
        "failed: ",
    ),
    "unwritable directories": (
        WRONG + "import posix\nfor area in ('/tmp', '/dev/shm', posix.getcwd()):\n"
        "    for mode in (0o500, 0o000, 0o100):\n"
        "        top = f'{area}/locked-{mode:o}'\n        posix.mkdir(top)\n"
        "        posix.mkdir(top + '/inner')\n        open(top + '/inner/file', 'w').write('x')\n"
        "        posix.chmod(top + '/inner', mode)\n        posix.chmod(top, mode)\n",
        "failed: ",
    ),
    "sticky directories": (
        WRONG + "import posix\nfor area in ('/tmp', '/dev/shm', posix.getcwd()):\n"
        "    posix.mkdir(f'{area}/sticky', 0o1777)\n    posix.chmod(f'{area}/sticky', 0o1777)\n"
        "    open(f'{area}/sticky/file', 'w').write('x')\n",
        "failed: ",
    ),
    "odd names": (
        WRONG + "import posix\nfor area in (b'/tmp', b'/dev/shm'):\n"
        "    for name in (b'-rf', b'*', b'new\\nline', b'\\xff\\xfe', b' ', b'.hidden',"
        " b'x' * 255, b'..\\x01'):\n"
        "        open(area + b'/' + name, 'wb').write(b'x')\n"
        "        posix.mkdir(area + b'/d' + name[:200])\n",
        "failed: ",
    ),
    "a zombie session leader whose threads kill": (
        WRONG + "import ctypes, posix, signal, threading, time\nif posix.fork() == 0:\n"
        "    posix.setsid()\n    def killer():\n        time.sleep(0.5)  # once its program is over\n"
        "        while True:\n"
        "            try:\n                posix.kill(-1, signal.SIGKILL)\n"
        "            except OSError:\n                pass\n            time.sleep(0.005)\n"
        "    threading.Thread(target=killer).start()\n"
        "    ctypes.CDLL(None).pthread_exit(None)  # only the main thread ends: a zombie leader\n"
        "time.sleep(0.3)\n",
        "failed: ",
    ),
    "a hidden daemon that keeps writing": (
        WRONG + "import ctypes, posix, time\nif posix.fork() == 0:\n    posix.setsid()\n"
        "    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # not dumpable: /proc/<pid> is root's\n"
        "    n = 0\n    while True:\n        n += 1\n"
        "        open(f'/dev/shm/{n % 50}', 'w').write('x' * 4096)\n        time.sleep(0.01)\n"
        "time.sleep(0.2)\n",
        "failed: ",
    ),
    "System V IPC objects": (
        WRONG + "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.shmat.restype = ctypes.c_void_p\n"
        "for _ in range(200):\n    segment = libc.shmget(0, 8 << 20, 0o1600)\n"
        "    if segment < 0:\n        break\n"
        "    address = libc.shmat(segment, None, 0)\n"
        "    if address in (None, ctypes.c_void_p(-1).value):\n        break\n"
        "    ctypes.memset(address, 1, 8 << 20)\n"
        "for _ in range(50):\n    queue = libc.msgget(0, 0o1600)\n    if queue < 0:\n"
        "        break\n    message = ctypes.create_string_buffer(b'\\x01' * 8 + b'x' * 8000)\n"
        "    while libc.msgsnd(queue, message, 8000, 0o4000) == 0:\n        pass\n"
        "for _ in range(50):\n    if libc.semget(0, 8, 0o1600) < 0:\n        break\n",
        "failed: ",
    ),
    "POSIX message queues and shared memory": (
        WRONG + "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "flags = os.O_CREAT | os.O_RDWR | os.O_NONBLOCK\n"
        "for n in range(64):\n    queue = libc.mq_open(f'/queue{n}'.encode(), flags, 0o600, None)\n"
        "    while queue >= 0 and libc.mq_send(queue, b'x' * 1024, 1024, 0) == 0:\n"
        "        pass\n"
        "for n in range(4):\n    open(f'/dev/shm/block{n}', 'wb').write(b'x' * (15 << 20))\n",
        "failed: ",
    ),
    # Processes handed to someone else: clone(CLONE_PARENT) makes a child of the program's
    # parent, which must reap it; a process that keeps moving to a new pid must still be found.
    "clone(CLONE_PARENT) children that exit at once": (
        WRONG + "import ctypes, posix\nlibc = ctypes.CDLL(None)\nfor _ in range(100):\n"
        f"    if libc.syscall({SYS_CLONE}, 0x8000 | 17, 0, 0, 0, 0) == 0:\n"
        "        posix._exit(0)\n",
        "failed: ",
    ),
    "clone(CLONE_PARENT) children that stay": (
        WRONG + "import ctypes, posix, time\nlibc = ctypes.CDLL(None)\nfor _ in range(8):\n"
        f"    if libc.syscall({SYS_CLONE}, 0x8000 | 17, 0, 0, 0, 0) == 0:\n"
        "        posix.setsid()\n        time.sleep(600)\n",
        "failed: ",
    ),
    "a process that moves to a new pid all the time": (
        WRONG + "import posix\nif posix.fork() == 0:\n    posix.setsid()\n    while True:\n"
        "        if posix.fork() != 0:\n            posix._exit(0)\n",
        "failed: ",
    ),
    # Buying time with the executor's work: the main thread at the lowest priority while a
    # thread of its own writes its output, then its report FIFO, a byte at a time, so that the
    # executor is kept busy reading; correct after 6 s.
    "SCHED_IDLE and a byte at a time to stdout, correct after 6 s": (
        "    import os, threading, time\n    def chatter():\n        while True:\n"
        "            os.write(1, b'x')\n"
        "    for _ in range(2):\n        threading.Thread(target=chatter, daemon=True).start()\n"
        "    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "    start = time.monotonic()\n    while time.monotonic() - start < 6:\n        pass\n"
        "CANONICAL",
        "timed out",
    ),
    "SCHED_IDLE and a byte at a time to its report FIFO, correct after 6 s": (
        "    import os, threading, time\n"
        "    fifo = [f'/tmp/{e}' for e in os.listdir('/tmp') if e.startswith('report-')][0]\n"
        "    def chatter():\n        fd = os.open(fifo, os.O_WRONLY)\n        while True:\n"
        "            os.write(fd, b'F')\n"
        "    threading.Thread(target=chatter, daemon=True).start()\n"
        "    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "    start = time.monotonic()\n    while time.monotonic() - start < 6:\n        pass\n"
        "CANONICAL",
        "timed out",
    ),
    # Turning the out-of-memory killer on the executor: small processes that set their own
    # oom_score_adj back to 0 hold the container's memory in socket buffers (which no process's
    # size shows), so that the largest process left is the executor.
    "small processes hold the memory in socket buffers": (
        WRONG + "import posix\nfor _ in range(3):\n    if posix.fork() == 0:\n"
        "        posix.execv('/usr/bin/python3', ['python3', '-I', '-S', '-c', FILL_SOCKETS])\n"
        "posix.execv('/usr/bin/python3', ['python3', '-I', '-S', '-c', FILL_SOCKETS])\n",
        "timed out",
    ),
    "every process slot holds socket buffers": (
        WRONG + "import posix\nfor _ in range(70):\n    try:\n        if posix.fork() == 0:\n"
        "            exec(FILL_SOCKETS)\n    except OSError:\n        break\n"
        "exec(FILL_SOCKETS)\n",
        "timed out",
    ),
    # Host-wide resources: as many open files as every process it can start can hold.
    "opens every file it can in every process": (
        WRONG + "import os, posix, time\nr, w = posix.pipe()\nfor _ in range(70):\n"
        "    try:\n        child = posix.fork()\n    except OSError:\n        break\n"
        "    if child == 0:\n        n, start = 0, time.monotonic()\n"
        "        while time.monotonic() - start < 0.5:\n            try:\n"
        "                os.open('/dev/null', os.O_RDONLY)\n                n += 1\n"
        "            except OSError:\n                break\n"
        "        posix.write(w, b'%d\\n' % n)\n        time.sleep(600)\n"
        "time.sleep(1.2)\nposix.close(w)\ntotal = sum(map(int, posix.read(r, 1 << 16).split()))\n"
        "raise RuntimeError(f'open files: {total}')\n",
        re.compile(r"failed: open files: \d+"),
    ),
    # State that outlives its program: a TCP port in TIME_WAIT (the server closes first) on the
    # port the controls bind.
    "leaves its port in TIME_WAIT": (
        WRONG + "import socket\nserver = socket.create_server(('127.0.0.1', CONTROL_PORT))\n"
        "client = socket.create_connection(('127.0.0.1', CONTROL_PORT))\n"
        "connection, _ = server.accept()\nconnection.close()\nserver.close()\n"
        "client.recv(1)\nclient.close()\n",
        "failed: ",
    ),
    # Reaching the processes that police it: renice, SCHED_IDLE and signal every process.
    "deprioritises and signals every process it can": (
        WRONG + "import os, posix, signal\n"
        "for pid in [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != posix.getpid()]:\n"
        "    for attempt in (lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),\n"
        "                    lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),\n"
        "                    lambda: posix.kill(pid, signal.SIGSTOP)):\n"
        "        try:\n            attempt()\n        except OSError:\n            pass\n",
        "failed: ",
    ),
    # The reference's verdicts: a forked copy that also reaches the end (the first report
    # counts), and output that is not valid UTF-8 (a lone surrogate, which StringIO accepts).
    "forks, and both copies pass": ("CANONICAL" + "import posix\nposix.fork()\n", "passed"),
    "prints a lone surrogate, then correct": (
        "CANONICAL" + "import sys\nprint('\\ud800')\nsys.stderr.write('\\udcff\\n')\n",
        "passed",
    ),
}


# Under gVisor (runsc) a program meets gVisor's kernel, which answers some of these otherwise than
# Linux: with its own refusal, or with a difference that harms nothing. The verdicts there.
RUNSC_CASES: dict[str, str | re.Pattern] = {
    # No network either way; gVisor's network stack says so in other words.
    "network access": "failed: [Errno 113] No route to host",
    # gVisor's /proc lets a program read the environment of the container's root processes
    # (nothing of the host's is there) and open what they hold open where the file itself allows
    # it: the warden's stdout, which is /dev/null (the executor's own are refused).
    "reads the container's environment": re.compile(r"failed: (\w+=\S* )+"),
    "writes a verdict to the executor's stdout": "failed: ",
    "kills every process it can": "failed: [Errno 3] No such process",
    # gVisor has no SCHED_IDLE: the program's call fails before it can buy any time.
    "two CPU hogs and SCHED_IDLE, correct after 6 s": "failed: [Errno 22] Invalid argument",
    "SCHED_IDLE and a byte at a time to stdout, correct after 6 s": (
        "failed: [Errno 22] Invalid argument"
    ),
    # A race between the program's own two threads, as it would be in the reference harness: if
    # its chatter reaches the report FIFO first, the program ends without a whole report (the
    # reference's "timed out"); if the failed call's report gets there first, that is its verdict.
    "SCHED_IDLE and a byte at a time to its report FIFO, correct after 6 s": re.compile(
        r"timed out|failed: \[Errno 22\] Invalid argument"
    ),
    # gVisor counts a task's time waiting for the host's CPU within its container's share as its
    # CPU time: 70 busy processes use up the 2 s first. (Files opened in gVisor are its own.)
    "opens every file it can in every process": re.compile(r"failed: open files: \d+|timed out"),
    # A fork costs gVisor some 15 ms: 100 of them are more than 2 s of the program's time there.
    "clone(CLONE_PARENT) children that exit at once": re.compile(r"failed: |timed out"),
    # gVisor's IPC namespace does not take the compose file's shmall: its 200 segments of 8 MiB,
    # written, hold more than the memory limit, and the program is ended for it.
    "System V IPC objects": "timed out",
    # Under gVisor a process may reserve its memory limit and 2 GiB (executor/program.py,
    # GVISOR_RESERVATION_BYTES): 8 GiB at once is refused, a MemoryError.
    "asks for 8 GiB at once": "failed: ",
}
# Under gVisor, a program that opened a TCP connection leaves its container to be replaced: its
# network stack keeps the port in TIME_WAIT, where no container setting reaches
# (executor/places.py).
# So does one that leaves System V IPC objects (gVisor's kernel lets `ipcrm --all` find none of
# them), and one that changes the warden's scheduling (gVisor's lets it: the check after every
# program finds it).
# gVisor's kernel has no out-of-memory killer: a program that takes the container's memory takes
# its whole sandbox down, and the pool runs it again in a new container (where it may run out of
# time first). The decoy's mechanism, and the verdict's cause, are Linux's only.
RUNSC_OUT_OF_MEMORY = {
    "small processes hold the memory in socket buffers",
    "every process slot holds socket buffers",
}
RUNSC_REPLACED = {
    "leaves its port in TIME_WAIT",
    "System V IPC objects",
    "deprioritises and signals every process it can",
    "opens every file it can in every process",  # 70 interpreters take the memory there too
    *RUNSC_OUT_OF_MEMORY,
}


# Runs as a completion's module-level code: counts what the container holds besides the probe
# itself, then asks for 300 MiB, and reports the counts as its failure message. `pids` is the
# kernel's own count of the container's tasks (zombies included); `files` the machine's open
# files (host-wide, so compared with some slack); `memory` the container's charged memory.
PROBE = """    pass
import os, posix
def read(path):
    try:
        return open(path).read()
    except OSError:
        return ''
def status(pid, key):
    line = [l for l in read(f'/proc/{pid}/status').splitlines() if l.startswith(key)]
    return line[0].split()[1] if line else '0'
def first(*paths):
    return next((int(text) for text in map(read, paths) if text.strip()), -1)
me = str(posix.getpid())
others = [p for p in os.listdir('/proc') if p.isdigit() and p != me]
processes = sum(status(p, 'Uid:') == str(posix.getuid()) for p in others)  # the programs' user's
pids = first('/sys/fs/cgroup/pids/pids.current', '/sys/fs/cgroup/pids.current')
rss_mib = sum(int(status(p, 'VmRSS:')) for p in others) // 1024
here = posix.getcwd()  # this program's scratch folder; its report FIFO is named after it
mine = {here, here.replace('/program-', '/report-')}
scratch = [e for a in ('/tmp', '/dev/shm', '/dev/mqueue') if os.path.isdir(a) for e in os.listdir(a)
           if os.path.join(a, e) not in mine]
import ctypes  # System V IPC objects as the kernel counts them (gVisor's has no /proc/sysvipc)
libc, info = ctypes.CDLL(None), ctypes.create_string_buffer(128)
ipc = 0
for call, arguments, offset in (('shmctl', (0, 14), 0), ('msgctl', (0, 12), 0), ('semctl', (0, 0, 19), 28)):
    if getattr(libc, call)(*arguments, info) >= 0:
        ipc += ctypes.c_int.from_buffer(info, offset).value
sockets = sum(len(read(f'/proc/net/{t}').splitlines()[1:])
              for t in ('tcp', 'tcp6', 'udp', 'udp6', 'raw', 'raw6', 'unix', 'udplite', 'udplite6'))
files = int((read('/proc/sys/fs/file-nr').split() or ['0'])[0])  # gVisor has none
memory_mib = first('/sys/fs/cgroup/memory/memory.usage_in_bytes', '/sys/fs/cgroup/memory.current') >> 20
stats = read('/sys/fs/cgroup/memory.stat') + read('/sys/fs/cgroup/memory/memory.stat')
shmem = sum(int(l.split()[1]) for l in stats.splitlines() if l.split()[0] in ('shmem', 'total_shmem'))
block = b'x' * (300 << 20)
raise RuntimeError(f'probe: processes={processes} pids={pids} scratch={len(scratch)} ipc={ipc} '
                   f'sockets={sockets} shmem={shmem} rss_mib={rss_mib} memory_mib={memory_mib} '
                   f'files={files}')
"""
PROBE_FIELDS = re.compile(
    r"failed: probe: processes=(?P<processes>\d+) pids=(?P<pids>-?\d+) scratch=(?P<scratch>\d+) "
    r"ipc=(?P<ipc>\d+) sockets=(?P<sockets>\d+) shmem=(?P<shmem>\d+) rss_mib=(?P<rss_mib>\d+) "
    r"memory_mib=(?P<memory_mib>-?\d+) files=(?P<files>\d+)"
)
# What may differ from the first probe: nothing of the container's own, but the memory of its
# other processes may grow a little as the executor serves programs, and the kernel may keep
# some of what a program freed cached a little longer; open files are the whole machine's.
SLACK = {"rss_mib": 16, "memory_mib": 64, "files": 4096}

# After every case, in the same container: the canonical answer in a program that also starts
# threads and binds a port (without SO_REUSEADDR), which passes only where the canonical answer
# alone would, and threads, the port and the process slots they need are as before the case.
CONTROLS = {
    "threads and a port": (
        "CANONICAL" + "import socket, threading\n"
        "threads = [threading.Thread(target=sum, args=(range(1000),)) for _ in range(8)]\n"
        "for thread in threads:\n    thread.start()\nfor thread in threads:\n    thread.join()\n"
        "listener = socket.socket()\nlistener.bind(('127.0.0.1', CONTROL_PORT))\n"
        "listener.listen()\nlistener.close()\n"
    ),
}
# The time limit of these runs, and how long past it a program may run on an idle machine: 1 s
# for the time-out exception to end it (as in the reference), and some for the executor.
TIMEOUT = 2
WALL_SLACK_SECONDS = 1.5
# The most open files one container's programs may hold (compose.yaml: 64 processes of 256),
# so that the largest pool started together cannot take the machine's file table.
FILES_PER_CONTAINER = 64 * 256


def expand(completion: str) -> str:
    return (
        completion.replace("CANONICAL", canonical())
        .replace("FILL_SOCKETS", repr(FILL_SOCKETS))
        .replace("CONTROL_PORT", str(CONTROL_PORT))
    )


def write_case_files(tmp_path, followed: bool) -> tuple[str, str]:
    """A problem file and its completions: a first probe, then each case, followed by a probe
    and the controls, or (`followed` false) by nothing, with one probe and the controls at the
    end."""
    rows = [("probe/before any case", PROBE)]
    followers = [("probe/{}", PROBE)] + [(f"control {c}/{{}}", t) for c, t in CONTROLS.items()]
    for name, (completion, _) in CASES.items():
        rows.append((f"case/{name}", completion))
        if followed:
            rows += [(row.format(name), text) for row, text in followers]
    if not followed:
        rows += [(row.format("after every case"), text) for row, text in followers]
    return write_rows(tmp_path, rows)


def write_rows(tmp_path, rows: list[tuple[str, str]]) -> tuple[str, str]:
    """A problem file of HumanEval/0 under each row's task id, and each row's completion."""
    problem = load_official(HUMANEVAL)[0]
    problem_file, samples_file = tmp_path / "problems.jsonl", tmp_path / "samples.jsonl"
    problem_file.write_text(
        "".join(json.dumps(problem | {"task_id": task_id}) + "\n" for task_id, _ in rows)
    )
    samples_file.write_text(
        "".join(json.dumps({"task_id": t, "completion": expand(c)}) + "\n" for t, c in rows)
    )
    return str(problem_file), str(samples_file)


# Under runc, the largest memory limit, more than the container can give a program once the
# decoy and the executor hold theirs: the cases that take memory reach the container's limit and
# the out-of-memory killer before the executor's count of what they hold reaches this one, so
# they show that the killer takes the decoy or them, never the executor (the count's own limit
# is tests/test_sandbox.py's). gVisor has neither killer nor decoy: the count's limit it is.
MEMORY_LIMIT = {"runc": 1536, "runsc": 1024}


def matches(expected: str | re.Pattern, verdict: str) -> bool:
    if isinstance(expected, str):
        return verdict == expected
    return expected.fullmatch(verdict) is not None


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_every_hostile_case_gets_its_verdict_and_harms_nothing(
    sandbox, runtime, tmp_path, monkeypatch, another_runs_pool
):
    # The pool runs every case, probe and control through one container, one at a time. Inspect's
    # docker sandbox gives every sample a container of its own (about a second each), so there
    # the cases run side by side, and one probe and the controls follow them all.
    pooled = sandbox == "pool"
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    monkeypatch.setenv("HEVAL_HOST_CANARY", HOST_SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", HOST_SECRET)
    # `rm -rf tmp` and friends run relative to the working directory: give them one to find.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "keep").write_text("host file")
    problem_file, samples_file = write_case_files(tmp_path, followed=pooled)

    run = OwnProjects()  # the run's own containers' projects, not other runs' on the engine
    try:
        [log] = inspect_eval(
            humaneval(
                problem_file=problem_file,
                samples=samples_file,
                sandbox=sandbox,
                timeout=TIMEOUT,
                memory_limit=MEMORY_LIMIT[runtime],
            ),
            model="none",
            log_dir=str(tmp_path / "logs"),
            display="none",
            max_samples=1 if pooled else None,  # in the file's order: each case, then its followers
        )
    finally:
        projects = run.stop()

    # Fail-on-error is on (Inspect's default): no attack may turn into a sample error.
    assert log.status == "success", log.error
    scores = {s.id: s.scores["unit_tests"] for s in log.samples}
    got = {sample_id: score.metadata["verdict"] for sample_id, score in scores.items()}
    expected = {name: verdict for name, (_, verdict) in CASES.items()}
    if runtime == "runsc":
        expected |= RUNSC_CASES
    wrong = {
        name: (verdict, got[f"case/{name}"])
        for name, verdict in expected.items()
        if not matches(verdict, got[f"case/{name}"])
    }
    assert not wrong, wrong
    causes = {sample_id: Cause(score.metadata["cause"]) for sample_id, score in scores.items()}
    # Under gVisor, a program that takes the container's memory may lose its sandbox twice.
    lost = {f"case/{name}" for name in RUNSC_OUT_OF_MEMORY} if runtime == "runsc" else set()
    disagree = {
        sample_id: (got[sample_id], cause)
        for sample_id, cause in causes.items()
        if not agrees(got[sample_id], cause)
        and not (sample_id in lost and cause == Cause.EXECUTOR_LOST)
    }
    assert not disagree, disagree
    expected_causes = {
        name: accepted
        for name, accepted in CASE_CAUSES.items()
        if runtime == "runc" or name not in RUNSC_OUT_OF_MEMORY | set(RUNSC_CASES)
    }
    other_causes = {
        name: causes[f"case/{name}"]
        for name, accepted in expected_causes.items()
        if causes[f"case/{name}"] not in accepted
    }
    assert not other_causes, other_causes
    # Nothing reached the executor: none was lost, and no container had to be replaced.
    # (and, there, what follows such a case at once may meet its sandbox's end: it runs again)
    replaced = (
        {sample_id for sample_id in scores if sample_id.split("/", 1)[1] in RUNSC_REPLACED}
        if runtime == "runsc"
        else set()
    )
    reached = {
        sample_id: (score.metadata.get("reason"), score.metadata.get("containers_replaced"))
        for sample_id, score in scores.items()
        if (score.metadata.get("containers_replaced") and sample_id not in replaced)
        or ("executor" in (score.metadata.get("reason") or "") and sample_id not in lost)
    }
    assert not reached, reached
    # Time it makes itself wait, or makes the executor spend, counts: it is stopped near its
    # limit (+1 s after the time-out exception), not after the 6 s it asks for. Only the pool
    # runs one program at a time on an otherwise idle machine.
    stretched = {
        name: scores[f"case/{name}"].metadata["wall_seconds"]
        for name in CASES
        if name.endswith("correct after 6 s") and got[f"case/{name}"] == "timed out"
    }
    bound = TIMEOUT + 1 + WALL_SLACK_SECONDS if pooled else TIMEOUT * 10
    buying_time = {name for name in CASES if name.endswith("correct after 6 s")}
    if runtime == "runsc":
        buying_time -= set(RUNSC_CASES)
    assert len(stretched) >= len(buying_time), stretched
    assert max(stretched.values()) < bound, stretched
    # Open files: what one container's programs could hold at once.
    opening = got["case/opens every file it can in every process"]
    if runtime == "runc" or opening != "timed out":
        opened = int(opening.rsplit(" ", 1)[1])
        assert 0 < opened <= FILES_PER_CONTAINER, opened
    followers = list(CASES) if pooled else ["after every case"]
    controls = {got[f"control {c}/{name}"] for name in followers for c in CONTROLS}
    assert controls == {"passed"}, {
        (c, name): got[f"control {c}/{name}"]
        for name in followers
        for c in CONTROLS
        if got[f"control {c}/{name}"] != "passed"
    }
    # What each case left in the container, as the probe after it saw it: everything as before
    # any case, within SLACK where the kernel or the machine may differ.
    probes = {
        name: PROBE_FIELDS.fullmatch(got[f"probe/{name}"])
        for name in ["before any case", *followers]
    }
    assert all(probes.values()), {name: got[f"probe/{name}"] for name, m in probes.items() if not m}
    baseline = {key: int(value) for key, value in probes["before any case"].groupdict().items()}
    assert baseline["processes"] == baseline["scratch"] == baseline["ipc"] == 0, baseline
    leftovers = {}
    for name in followers:
        found = {key: int(value) for key, value in probes[name].groupdict().items()}
        differences = {key: found[key] - baseline[key] for key in found}
        # Open files are the whole machine's: only the pool's probe comes after the cases.
        excess = {
            key: difference
            for key, difference in differences.items()
            if (difference > SLACK[key] if key in SLACK else difference != 0)
            and (pooled or key != "files")
        }
        # The table behind the closing note (pytest -s shows it).
        print(f"{sandbox} | {name} | {got.get(f'case/{name}', '')[:60]} | {differences}")
        if excess:
            leftovers[name] = excess
    assert not leftovers, leftovers
    # The host: its files, its environment and its containers are as they were.
    assert (tmp_path / "tmp" / "keep").read_text() == "host file"
    assert os.environ["HEVAL_HOST_CANARY"] == HOST_SECRET
    assert projects and project_containers(projects, stopped_too=True) == set()  # none is left


# The cases that take the container's memory, each with time to spare, then the canonical
# answer: the kernel's out-of-memory killer must end the case and take the decoy or the program's
# processes, never the executor, whose container then runs the next program (the pool's one
# container). Two hold it in socket buffers, which no process's size shows; the memory bomb in
# its own pages. Under runc: gVisor's kernel has no out-of-memory killer (its sandbox ends whole,
# and the pool replaces it: the hostile run's).
MEMORY_CASES = (
    "small processes hold the memory in socket buffers",
    "every process slot holds socket buffers",
    "memory bomb",
)


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_the_containers_memory_taken_meets_the_out_of_memory_killer_not_the_executor(
    sandbox, tmp_path, monkeypatch
):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    rows = [
        row
        for name in MEMORY_CASES
        for row in ((f"case/{name}", CASES[name][0]), (f"after/{name}", "CANONICAL"))
    ]
    problem_file, samples_file = write_rows(tmp_path, rows)
    [log] = inspect_eval(
        humaneval(
            problem_file=problem_file,
            samples=samples_file,
            sandbox=sandbox,
            timeout=20,  # each reaches the container's memory in 0.5 to 3 s
            memory_limit=MEMORY_LIMIT["runc"],
        ),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,  # in the file's order: each case, then the canonical answer after it
    )
    assert log.status == "success", log.error
    found = {str(s.id): s.scores["unit_tests"].metadata for s in log.samples}
    for name in MEMORY_CASES:
        case, after = found[f"case/{name}"], found[f"after/{name}"]
        assert (case["verdict"], case["cause"]) == ("timed out", Cause.MEMORY.value), case
        assert case["reason"].startswith("killed by the out-of-memory killer"), case
        assert not case.get("containers_replaced"), case
        assert (after["verdict"], after.get("containers_replaced")) == ("passed", None), after
