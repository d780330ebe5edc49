"""`inspect score` re-scores a finished log of ours in the real sandbox, in a process that never
loaded the task: the problems come from the files the samples name, checked by checksum."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log

from heval_inspect import humaneval, humaneval_infilling
from heval_inspect.data import (
    EXAMPLE_PROBLEMS,
    EXAMPLE_SAMPLES,
    HUMANEVAL,
    load_official,
    official_path,
)

pytestmark = pytest.mark.docker

INSPECT = str(Path(sys.executable).with_name("inspect"))
# A correct answer that then spends 1.5 s of CPU time: passed with the default 3 s, timed out
# with 1 s.
SLOW = (
    "\nimport time\n_start = time.process_time()\n"
    "while time.process_time() - _start < 1.5:\n    pass\n"
)


def verdicts(log_file: str) -> dict[tuple[str, int], str]:
    log = read_eval_log(log_file)
    return {
        (str(sample.id), sample.epoch): sample.scores["unit_tests"].metadata["verdict"]
        for sample in log.samples
    }


def rescore(log_file: str, *scorer_args: str) -> subprocess.CompletedProcess:
    command = [INSPECT, "score", log_file, "--scorer", "heval_inspect/unit_tests", *scorer_args]
    return subprocess.run(
        [*command, "--action", "overwrite", "--overwrite", "--display", "plain"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_a_log_rescored_with_another_time_limit_gets_the_verdicts_of_a_fresh_run(tmp_path):
    samples = tmp_path / "slow_and_quick.jsonl"
    rows = [
        {"task_id": problem["task_id"], "completion": problem["canonical_solution"] + tail}
        for problem in load_official(HUMANEVAL)[:3]
        for tail in (SLOW, "")
    ]
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))

    def run(**limits) -> str:
        task = humaneval(samples=str(samples), partial=True, **limits)
        [log] = inspect_eval(task, model="none", log_dir=str(tmp_path / "logs"), display="none")
        assert log.status == "success", log.error
        return log.location

    first = run()
    assert set(verdicts(first).values()) == {"passed"}

    scored = rescore(first, "-S", "timeout=1")
    assert scored.returncode == 0, scored.stderr
    fresh = verdicts(run(timeout=1))
    assert verdicts(first) == fresh
    assert sorted(fresh.values()) == ["passed"] * 3 + ["timed out"] * 3
    log = read_eval_log(first)
    assert log.results.scores[0].metrics["pass@1"].value == 0.5


def test_a_log_of_a_users_problem_file_is_rescored_with_that_file_named(tmp_path):
    mine = tmp_path / "mine.jsonl"
    mine.write_bytes(official_path(EXAMPLE_PROBLEMS).read_bytes())
    task = humaneval_infilling(problem_file=str(mine), samples=str(official_path(EXAMPLE_SAMPLES)))
    [log] = inspect_eval(task, model="none", log_dir=str(tmp_path / "logs"), display="none")
    before = verdicts(log.location)

    unnamed = rescore(log.location)
    output = " ".join((unnamed.stdout + unnamed.stderr).split())
    assert unnamed.returncode != 0
    assert "comes from mine.jsonl@f066a37097c9, which is not loaded" in output
    assert "-S problem_file=PATH" in output

    altered = tmp_path / "altered" / "mine.jsonl"
    altered.parent.mkdir()
    altered.write_text(mine.read_text().replace("return", "return ", 1))
    refused = rescore(log.location, "-S", f"problem_file={altered}")
    assert refused.returncode != 0
    assert "(mine.jsonl@" in " ".join((refused.stdout + refused.stderr).split())

    named = rescore(log.location, "-S", f"problem_file={mine}")
    assert named.returncode == 0, named.stderr
    assert verdicts(log.location) == before
