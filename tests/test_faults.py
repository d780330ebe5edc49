"""Faults around the sandbox: no Docker, a container killed or removed mid-run, an interrupted run.

Each is done for real (no engine reachable, `docker kill` / `docker rm -f` of a running pool
container, SIGINT to a running `inspect eval`), and the run must end with every sample scored
exactly once, after `inspect eval-retry` where the run stopped.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai import eval_retry
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.solver import Generate, TaskState, solver

from heval_inspect.solvers import reference
from heval_inspect.tasks import humaneval_infilling

pytestmark = pytest.mark.docker

INSPECT = str(Path(sys.executable).with_name("inspect"))


def problem_file(tmp_path, seconds: list[float]) -> str:
    """One task per entry; its test sleeps that long after leaving a `started` file in its
    scratch folder (so a test can tell when it runs), then passes with the canonical answer."""
    path = tmp_path / "problems.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"slow/{index}",
                    "prompt": "def answer():\n",
                    "suffix": "",
                    "canonical_solution": "    return 42\n",
                    "test": (
                        f"open('started', 'w').close()\nimport time\ntime.sleep({delay})\n"
                        "def check(candidate):\n    assert candidate() == 42\n"
                    ),
                    "entry_point": "answer",
                }
            )
            + "\n"
            for index, delay in enumerate(seconds)
        )
    )
    return str(path)


@solver
def no_model_call(calls: list):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        calls.append(state.sample_id)
        return state

    return solve


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
@pytest.mark.parametrize(
    "fault, expected",
    [
        # heval_inspect's message for the pool, Inspect's own for its docker sandbox.
        ("not installed", "Docker is not installed|require Docker Engine"),
        ("not running", "Docker is not running|require a working Docker Engine"),
    ],
)
def test_no_docker_is_one_clear_error_before_any_sample_runs(
    sandbox, fault, expected, tmp_path, monkeypatch
):
    if fault == "not installed":
        monkeypatch.setenv("PATH", str(tmp_path))  # no `docker` on it
    else:
        monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    calls: list = []
    with pytest.raises(PrerequisiteError, match=expected):
        inspect_eval(
            humaneval_infilling(problem_file=problem_file(tmp_path, [0]), sandbox=sandbox),
            model="none",
            solver=no_model_call(calls),
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    assert calls == []  # no solver (so no model) was called


def pool_containers() -> list[str]:
    listing = subprocess.run(
        ["docker", "ps", "-q", "--filter", "name=heval-pool-"],
        capture_output=True,
        text=True,
        check=True,
    )
    return listing.stdout.split()


class WhenAProgramStarts(threading.Thread):
    """In the background: once a pool container runs a program that has started, do `action`
    (a docker command) to that container, once; `done` says whether it was done."""

    def __init__(self, action: list[str]) -> None:
        super().__init__(daemon=True)
        self.action, self.done = action, False
        self.start()

    def run(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for container in pool_containers():
                # As the programs' user: their scratch folders are theirs alone.
                started = subprocess.run(
                    ["docker", "exec", "--user", "65534:65534", container,
                     "sh", "-c", "ls /tmp/*/started"],
                    capture_output=True,
                    check=False,
                )  # fmt: skip
                if started.returncode == 0:
                    subprocess.run(["docker", *self.action, container], check=True)
                    self.done = True
                    return
            time.sleep(0.1)


def scored_once(log) -> dict[str, str]:
    ids = Counter(str(sample.id) for sample in log.samples)
    assert set(ids.values()) == {1}, ids
    return {str(s.id): s.scores["unit_tests"].metadata["verdict"] for s in log.samples}


def test_a_container_killed_mid_program_is_restarted_and_the_program_run_again(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    killer = WhenAProgramStarts(["kill"])
    [log] = inspect_eval(
        humaneval_infilling(problem_file=problem_file(tmp_path, [2, 0, 0])),
        model="none",
        solver=reference(),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    killer.join()
    assert killer.done
    assert log.status == "success", log.error
    assert scored_once(log) == {f"slow/{i}": "passed" for i in range(3)}


def test_a_container_removed_mid_program_is_a_sample_error_and_retry_completes(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    remover = WhenAProgramStarts(["rm", "-f"])
    [log] = inspect_eval(
        humaneval_infilling(problem_file=problem_file(tmp_path, [2, 0, 0, 0])),
        model="none",
        solver=reference(),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    remover.join()
    assert remover.done
    assert log.status == "error"
    errored = [sample for sample in log.samples if sample.error is not None]
    assert errored and "container" in errored[0].error.message
    assert not any(  # an error, never a verdict
        sample.scores for sample in errored
    )

    [retried] = eval_retry(log, log_dir=str(tmp_path / "logs"), display="none")
    assert retried.status == "success", retried.error
    assert scored_once(retried) == {f"slow/{i}": "passed" for i in range(4)}
    assert pool_containers() == []


def test_an_interrupted_run_is_completed_by_eval_retry(tmp_path):
    log_dir = tmp_path / "logs"
    environment = os.environ | {"HEVAL_POOL_SIZE": "1"}
    run = subprocess.Popen(
        [
            INSPECT, "eval", "heval_inspect/humaneval_infilling", "--model", "none",
            "--solver", "heval_inspect/reference", "--display", "none",
            "-T", f"problem_file={problem_file(tmp_path, [0.5] * 40)}",
            "--log-dir", str(log_dir),
        ],
        env=environment,
    )  # fmt: skip
    time.sleep(10)  # pool start-up, then some of the 40 half-second samples
    run.send_signal(signal.SIGINT)
    run.wait(timeout=60)
    [interrupted] = [read_eval_log(info) for info in list_eval_logs(str(log_dir))]
    assert interrupted.status in ("cancelled", "error")
    assert 0 < len(interrupted.samples or []) < 40
    assert pool_containers() == []  # the pool was taken down on the way out

    retry = subprocess.run(
        [INSPECT, "eval-retry", interrupted.location, "--log-dir", str(log_dir),
         "--display", "none"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert retry.returncode == 0, retry.stderr
    [completed] = [
        log
        for log in map(read_eval_log, list_eval_logs(str(log_dir)))
        if log.location != interrupted.location
    ]
    assert completed.status == "success"
    assert scored_once(completed) == {f"slow/{i}": "passed" for i in range(40)}
