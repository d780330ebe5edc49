"""What a user reads of a real run: the command line's live display and header, the log's
figures, `evals_df`, the report. Runs in the real sandbox."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.analysis import evals_df
from inspect_ai.log import read_eval_log

from heval_inspect.data import HUMANEVAL, load_official

pytestmark = pytest.mark.docker

INSPECT = str(Path(sys.executable).with_name("inspect"))
# Each program then sleeps a second, so that every sample ends after Inspect's display has
# recomputed its figures (at most every 0.9 s): each update is the run's figure at that sample.
SLEEP = "\nimport time\ntime.sleep(1)\n"


def replay_file(tmp_path, problems: int) -> str:
    """Two completions per problem, the first right and the second wrong: pass@1 is 0.5."""
    rows = [
        {"task_id": problem["task_id"], "completion": completion + SLEEP}
        for problem in load_official(HUMANEVAL)[:problems]
        for completion in (problem["canonical_solution"], "    return None\n")
    ]
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def run(tmp_path, *options: str) -> tuple[str, Path]:
    logs = tmp_path / "logs"
    command = [INSPECT, "eval", "heval_inspect/humaneval", "--model", "none", "-T", "partial=true"]
    command += ["--max-samples", "1", "--display", "plain", "--log-dir", str(logs), *options]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    [log] = logs.glob("*.eval")
    return result.stdout + result.stderr, log


@pytest.mark.parametrize("reducer", [[], ["--epochs-reducer", "mean"], ["--epochs-reducer", "max"]])
def test_the_live_display_shows_the_runs_own_figure_and_no_warning(tmp_path, reducer):
    output, log = run(tmp_path, "-T", f"samples={replay_file(tmp_path, 2)}", *reducer)
    assert "WARNING" not in output, output
    progress = [line for line in output.splitlines() if "Samples:" in line]
    assert "Samples:   4/  4" in progress[-1] and "pass@1: 0.50" in progress[-1], progress
    assert read_eval_log(str(log)).results.scores[0].metrics["pass@1"].value == 0.5
    assert "dataset: HumanEval" in output


def test_a_standard_error_from_one_problem_is_nan_and_shown_as_none(tmp_path):
    output, log = run(tmp_path, "-T", f"samples={replay_file(tmp_path, 1)}")
    metrics = read_eval_log(str(log)).results.scores[0].metrics
    assert metrics["pass@1"].value == 0.5
    assert math.isnan(metrics["stderr"].value) and "pass@1_stderr" not in metrics
    frame = evals_df(str(log))
    assert frame["score_headline_value"][0] == 0.5
    assert frame["score_headline_stderr"].isna()[0]
    assert frame["dataset_name"][0] == "HumanEval"
    report = subprocess.run(
        [str(Path(sys.executable).with_name("heval-inspect")), "report", str(log),
         "--out", str(tmp_path / "report")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "| 0.500 (one problem: no interval) |" in (tmp_path / "report" / "report.md").read_text()
