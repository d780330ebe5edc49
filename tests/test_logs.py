"""Logs that Inspect's own tools read right: the headline and its error bar in `evals_df`, the
provenance in `inspect log dump`, and samples that carry each text once.

Four runs whose verdicts are known in advance (completions replayed: canonical ones pass, garbage
fails), one of each kind: HumanEval, one infilling subset, the infilling group and a problem file.
"""

import hashlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.analysis import evals_df
from inspect_ai.log import resolve_sample_attachments

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.sandbox import EXECUTOR_SOURCE
from heval_inspect.tasks import (
    humaneval,
    humaneval_infilling,
    humaneval_single_line_infilling,
)

pytestmark = pytest.mark.docker

GARBAGE = "<<< not python >>>\n"

# (task id, passes) of each run; a task's HumanEval problem is its cluster.
HUMANEVAL_RUN = [("HumanEval/0", True), ("HumanEval/2", True), ("HumanEval/3", False),
                 ("HumanEval/4", False)]  # fmt: skip
SINGLE_LINE_RUN = [
    ("SingleLineInfilling/HumanEval/0/L0", True),
    ("SingleLineInfilling/HumanEval/0/L1", False),
    ("SingleLineInfilling/HumanEval/3/L0", True),
    ("SingleLineInfilling/HumanEval/3/L2", True),
]
INFILLING_RUN = [
    ("SingleLineInfilling/HumanEval/0/L0", True),
    ("MultiLineInfilling/HumanEval/0/L0_L0", False),
    ("MultiLineInfilling/HumanEval/2/L0_L0", True),
    ("RandomSpanInfilling/HumanEval/2/1", True),
    ("RandomSpanInfillingLight/HumanEval/4/1", True),
]
PROBLEM_FILE_RUN = [("mine/0", True), ("mine/1", True), ("mine/2", False)]


def by_hand(run: list[tuple[str, bool]]) -> tuple[float, float]:
    """pass@1 over the tasks and its standard error clustered by HumanEval problem."""
    n = len(run)
    mean = sum(passes for _, passes in run) / n
    totals: dict[str, float] = {}
    for task_id, passes in run:
        match = re.search(r"HumanEval/\d+", task_id)
        problem = match.group(0) if match else task_id
        totals[problem] = totals.get(problem, 0.0) + (passes - mean) / n
    g = len(totals)
    return mean, math.sqrt(g / (g - 1) * sum(t * t for t in totals.values()))


@pytest.fixture(scope="module")
def canonical() -> dict[str, dict]:
    files = [HUMANEVAL, *SUBSETS.values()]
    return {record["task_id"]: record for file in files for record in load_official(file)}


def completions(path: Path, run, records) -> str:
    rows = [
        {"task_id": task_id, "completion": records[task_id]["canonical_solution"] if passes
         else GARBAGE}
        for task_id, passes in run
    ]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.fixture(scope="module")
def logs(tmp_path_factory, canonical) -> dict[str, object]:
    work = tmp_path_factory.mktemp("logs")
    problems = work / "mine.jsonl"
    problems.write_text(
        "".join(
            json.dumps(canonical[f"HumanEval/{n}"] | {"task_id": f"mine/{n}"}) + "\n"
            for n in range(3)
        )
    )
    mine = {f"mine/{n}": canonical[f"HumanEval/{n}"] for n in range(3)}
    runs = {
        "humaneval": (humaneval, HUMANEVAL_RUN, canonical, {}),
        "single_line": (humaneval_single_line_infilling, SINGLE_LINE_RUN, canonical, {}),
        "infilling": (humaneval_infilling, INFILLING_RUN, canonical, {}),
        "problem_file": (humaneval, PROBLEM_FILE_RUN, mine, {"problem_file": str(problems)}),
    }
    logs = {}
    for name, (task, run, records, arguments) in runs.items():
        samples = completions(work / f"{name}.jsonl", run, records)
        [log] = inspect_eval(
            task(samples=samples, partial=True, **arguments),
            model="none",
            log_dir=str(work / "logs"),
            display="none",
        )
        assert log.status == "success", log.error
        logs[name] = log
    return logs


@pytest.mark.parametrize(
    "name, run, metric",
    [
        ("humaneval", HUMANEVAL_RUN, "pass@1"),
        ("single_line", SINGLE_LINE_RUN, "pass@1"),
        ("infilling", INFILLING_RUN, "sample_weighted/pass@1"),
        ("problem_file", PROBLEM_FILE_RUN, "pass@1"),
    ],
)
def test_evals_df_gives_the_headline_and_its_clustered_standard_error(logs, name, run, metric):
    [row] = evals_df(logs[name].location, quiet=True).to_dict("records")
    value, stderr = by_hand(run)
    assert row["score_headline_name"] == "unit_tests"
    assert row["score_headline_metric"] == metric
    assert row["score_headline_value"] == pytest.approx(value, abs=1e-12)
    assert row["score_headline_stderr"] == pytest.approx(stderr, abs=1e-12)
    assert stderr > 0
    # The header's first two places, and each figure once: no second name for the error.
    metrics = logs[name].results.scores[0].metrics
    assert list(metrics)[:2] == [metric, "stderr"]
    assert metrics["stderr"].value == row["score_headline_stderr"]
    assert f"{metric}_stderr" not in metrics


def test_the_infilling_group_clusters_its_error_by_problem(logs):
    # Two of its tasks come from HumanEval/0 and two from HumanEval/2: not independent.
    value, clustered = by_hand(INFILLING_RUN)
    n = len(INFILLING_RUN)
    unclustered = math.sqrt(value * (1 - value) / (n - 1))
    assert logs["infilling"].results.scores[0].metrics["stderr"].value == pytest.approx(clustered)
    assert not math.isclose(clustered, unclustered)


def test_each_log_records_its_version_and_provenance(logs, canonical):
    log = logs["infilling"]
    assert log.eval.task_version == 4
    metadata = log.eval.metadata
    assert metadata["full_task_version"] == "4-A"
    assert metadata["task_comparability_version"] == 4
    assert metadata["task_interface_version"] == "A"
    provenance = metadata["provenance"]
    problems = [f for f in provenance["data_files"] if f["role"] == "problems"]
    assert [Path(f["path"]).name for f in problems] == [f.filename for f in SUBSETS.values()]
    assert [f["sha256"] for f in problems] == [f.sha256 for f in SUBSETS.values()]
    [completion_file] = [f for f in provenance["data_files"] if f["role"] == "completions"]
    assert (
        completion_file["sha256"]
        == hashlib.sha256(Path(completion_file["path"]).read_bytes()).hexdigest()
    )
    sandbox = provenance["sandbox"]
    assert sandbox["kind"] == "pool" and sandbox["image"] == "heval-inspect-sandbox:2"
    assert sandbox["image_id"].startswith("sha256:")
    assert sandbox["base_image_id"].startswith("sha256:")
    assert sandbox["executor_sha256"] == hashlib.sha256(EXECUTOR_SOURCE.encode()).hexdigest()
    assert provenance["limits"]["timeout_seconds"] == 3.0
    assert provenance["limits"]["memory_bytes"] == 1 << 30
    assert provenance["prompt"]["style"] == "chat"
    assert provenance["package"]["name"] == "heval-inspect"
    assert logs["humaneval"].eval.metadata["full_task_version"] == "4-A"
    # `inspect log dump` prints it as it is.
    dump = subprocess.run(
        [str(Path(sys.executable).with_name("inspect")), "log", "dump", "--header-only",
         log.location],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(dump.stdout)["eval"]["metadata"] == metadata


def test_samples_carry_each_text_once(logs, canonical):
    log = logs["single_line"]
    sample = next(s for s in log.samples if s.id == "SingleLineInfilling/HumanEval/0/L1")
    record = canonical[sample.id]
    assert set(sample.metadata) == {"subset", "problem_id", "source"}
    # The problem's texts: prompt and suffix in the input, the program (tests included) in the
    # transcript, not in the score; the answer as code; the model's code itself in the store.
    score = sample.scores["unit_tests"]
    assert record["prompt"] in sample.input and record["suffix"] in sample.input
    events = resolve_sample_attachments(sample).events
    [program] = [event.data for event in events if event.event == "info"]
    assert program.count(record["test"]) == 1 and record["test"] not in score.explanation
    assert score.answer == "```\n" + GARBAGE + "```"
    assert sample.store["heval_inspect:middle"] == GARBAGE
    assert score.metadata["verdict"].startswith("failed: ")
