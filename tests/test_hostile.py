"""Hostile completions in the real sandbox: each gets its right verdict, and harms nothing else.

Every case is a completion of HumanEval/0 (`has_close_elements`), so the program around it is a
real one: prompt + completion + test + check. Code after the function body runs at module level,
before the tests are defined: that is where a completion fakes success or attacks. Each case is
followed by a control task answering the canonical solution in the same container (one container
for the pool): every control must pass, so no case changes another sample's verdict.
"""

import gzip
import json
import os
import re
import subprocess

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.tasks import humaneval

from .conftest import SHARED_DATA

pytestmark = pytest.mark.docker

WRONG = "    return True\n"  # fails the second assertion: has_close_elements(..., 0.05) is False
HOST_SECRET = "sk-host-secret-d41d8cd9"
FAKE_VERDICT_LINE = json.dumps(
    {
        "status": "passed",
        "reason": "",
        "returncode": 0,
        "cpu_seconds": 0.0,
        "wall_seconds": 0.0,
        "stdout_bytes": 0,
        "stderr_tail": "",
    }
)


def canonical() -> str:
    with gzip.open(SHARED_DATA / "human-eval" / "HumanEval.jsonl.gz", "rt") as lines:
        return json.loads(lines.readline())["canonical_solution"]


# case: (completion, expected verdict: the exact result string, or a regular expression for it)
CASES: dict[str, tuple[str, str | re.Pattern]] = {
    # The reference harness's own example cases, on this problem.
    "subprocess rm -rf": (
        "    import subprocess\n    subprocess.check_output('rm -rf tmp')\n",
        "failed: 'NoneType' object is not callable",  # Popen is disabled, as in the reference
    ),
    "sleep(10)": ("    import time\n    time.sleep(10)\n" + "CANONICAL", "timed out"),
    "input()": ("    return input('enter a number')\n", "failed: EOF when reading a line"),
    # Faking success: the tests never run, or fail, and the verdict must say so.
    "exit(0) before the tests": (WRONG + "exit(0)\n", "failed: 'NoneType' object is not callable"),
    "quit() before the tests": (WRONG + "quit()\n", "failed: 'NoneType' object is not callable"),
    "sys.exit(0) before the tests": (WRONG + "import sys\nsys.exit(0)\n", "failed: 0"),
    "os._exit(0) before the tests": (
        WRONG + "import os\nos._exit(0)\n",
        "failed: exited before the tests completed",
    ),
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
        # 768 MiB of untouched zero pages first (calloc maps them, no CPU), then 64 MiB blocks
        # written page by page until the 1 GiB address-space limit: MemoryError after about
        # 0.15 s of CPU. Touching the whole 1 GiB took 0.55 to 1.9 s on one machine, which raced
        # this suite's 2 s time limit.
        "    reserve = bytes(768 << 20)\n    blocks = []\n"
        + "    while True:\n        blocks.append(bytearray(1 << 26))\n",
        "failed: ",
    ),
    "asks for 8 GiB at once": ("    block = bytearray(8 << 30)\n", "failed: "),
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
        "failed: HOME LANG OMP_NUM_THREADS PATH",
    ),
    "reads the container's environment": (
        "    raise RuntimeError(open('/proc/1/environ').read().replace('\\0', ' '))\n",
        # The container's init runs as root: its environment is not the program's to read.
        "failed: [Errno 13] Permission denied: '/proc/1/environ'",
    ),
    "appends to /etc/passwd": (
        "    open('/etc/passwd', 'a').write('pwned::0:0::/:/bin/sh\\n')\n",
        "failed: [Errno 13] Permission denied: '/etc/passwd'",
    ),
    "writes outside the scratch dir": (
        "    open('/var/tmp/pwned', 'w').write('x')\n",
        "failed: [Errno 30] Read-only file system: '/var/tmp/pwned'",
    ),
    "kills every process it can": (
        "    import posix, signal\n    posix.kill(-1, signal.SIGKILL)\n",
        "failed: the program killed the sandbox's executor",
    ),
}


def write_case_files(tmp_path) -> tuple[str, str]:
    """A problem file with a case and a control task per case, and the completion file."""
    with gzip.open(SHARED_DATA / "human-eval" / "HumanEval.jsonl.gz", "rt") as lines:
        problem = json.loads(lines.readline())
    problems, rows = [], []
    for name, (completion, _) in CASES.items():
        for task_id, answer in (
            (f"case/{name}", completion.replace("CANONICAL", canonical())),
            (f"control/{name}", canonical()),
        ):
            problems.append(problem | {"task_id": task_id})
            rows.append({"task_id": task_id, "completion": answer})
    problem_file, samples_file = tmp_path / "problems.jsonl", tmp_path / "samples.jsonl"
    problem_file.write_text("".join(json.dumps(p) + "\n" for p in problems))
    samples_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(problem_file), str(samples_file)


def matches(expected: str | re.Pattern, verdict: str) -> bool:
    if isinstance(expected, str):
        return verdict == expected
    return expected.fullmatch(verdict) is not None


def heval_containers() -> set[str]:
    listing = subprocess.run(
        ["docker", "ps", "-a", "-q", "--filter", "label=com.docker.compose.project"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(listing.stdout.split())


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_every_hostile_case_gets_its_verdict_and_harms_nothing(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")  # every case and control through one container
    monkeypatch.setenv("HEVAL_HOST_CANARY", HOST_SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", HOST_SECRET)
    # `rm -rf tmp` and friends run relative to the working directory: give them one to find.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "keep").write_text("host file")
    containers_before = heval_containers()
    problem_file, samples_file = write_case_files(tmp_path)

    [log] = inspect_eval(
        humaneval(problem_file=problem_file, samples=samples_file, sandbox=sandbox, timeout=2),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )

    assert log.status == "success", log.error
    got = {s.id: s.scores["unit_tests"].metadata["verdict"] for s in log.samples}
    wrong = {
        name: (expected, got[f"case/{name}"])
        for name, (_, expected) in CASES.items()
        if not matches(expected, got[f"case/{name}"])
    }
    assert not wrong, wrong
    assert {got[f"control/{name}"] for name in CASES} == {"passed"}
    # The host: its files, its environment and its containers are as they were.
    assert (tmp_path / "tmp" / "keep").read_text() == "host file"
    assert os.environ["HEVAL_HOST_CANARY"] == HOST_SECRET
    assert heval_containers() - containers_before == set()  # none of the run's is left
