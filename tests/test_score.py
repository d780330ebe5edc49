"""`heval-inspect score` (score.py): the log `inspect eval -T samples=FILE` writes, without
Inspect's sample loop, read alike by every reader; and a killed run taken over by the next."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai.analysis import evals_df
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.errors import TaskArgumentError
from heval_inspect.export import export_results
from heval_inspect.report import build_report
from heval_inspect.schema import RUN_KEY
from heval_inspect.score import FLUSH_SAMPLES, log_shards, score_completions
from heval_inspect.tasks import humaneval
from tests.report_logs import report_figures

BIN = Path(sys.executable).parent
# What differs between any two runs: ids, clocks and the time programs took.
RUN_FIELDS = {
    "eval_id", "run_id", "created", "task_id", "uuid", "id", "started_at", "completed_at",
    "total_time", "working_time", "timestamp", "working_start", "span_id", "cpu_seconds",
    "wall_seconds", "log_shared", RUN_KEY,
}  # fmt: skip
SECONDS = re.compile(r"\d+\.\d+ s\b")

# Answers of every kind the scorer tells apart, by what they do to the gap's indentation.
ANSWERS = [
    lambda canonical, indent: canonical,
    lambda canonical, indent: "",
    lambda canonical, indent: f"{indent}return None\n",
    lambda canonical, indent: f"{indent}return (\n",
    lambda canonical, indent: f"{indent}import sys; sys.exit(0)\n",  # an early exit is a fail
    lambda canonical, indent: f"{indent}while True:\n{indent}    pass\n",
    lambda canonical, indent: f"{indent}return undefined_name\n",
    lambda canonical, indent: f"{indent}print('passed'); import os; os._exit(0)\n",
]
TASK_ARGS = ["subsets=single_line,random_span_light", "partial=true", "k=1,2", "timeout=1"]


def completion_file(path: Path) -> Path:
    """Two completions for every single-line and random-span-light task of HumanEval/0-4, of the
    kinds above in turn."""
    rows, turn = [], 0
    for name in ("single_line", "random_span_light"):
        for record in load_official(SUBSETS[name]):
            if int(re.search(r"HumanEval/(\d+)", record["task_id"]).group(1)) >= 5:
                continue
            canonical = record["canonical_solution"]
            indent = canonical[: len(canonical) - len(canonical.lstrip(" "))] or "    "
            for _ in range(2):
                completion = ANSWERS[turn % len(ANSWERS)](canonical, indent)
                rows.append({"task_id": record["task_id"], "completion": completion})
                turn += 1
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def comparable(log_file: str) -> tuple[dict, list[dict]]:
    """A log's header and samples without what differs between any two runs."""
    log = read_eval_log(log_file, resolve_attachments=True)
    document = json.loads(log.model_dump_json())
    document.pop("stats")  # timings
    samples = sorted(document.pop("samples"), key=lambda sample: (sample["id"], sample["epoch"]))
    for sample in samples:
        sample["key"] = (sample["id"], sample["epoch"])
        sample.pop("attachments")
        # The steps Inspect's sample loop records (spans, state changes) are its own; what the
        # scorer records is the program that ran and the score.
        sample["events"] = [e for e in sample["events"] if e["event"] in ("info", "score")]
    return without_run_fields(document), without_run_fields(samples)


def without_run_fields(value):
    if isinstance(value, dict):
        return {key: without_run_fields(v) for key, v in value.items() if key not in RUN_FIELDS}
    if isinstance(value, list):
        return [without_run_fields(v) for v in value]
    return SECONDS.sub("<seconds>", value) if isinstance(value, str) else value


def flattened(value, path: str = "") -> dict[str, object]:
    """Every leaf of a document by its path, so that a difference names its field."""
    if isinstance(value, dict):
        items = [(f"{path}.{key}", item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [(f"{path}[{n}]", item) for n, item in enumerate(value)]
    else:
        return {path: value}
    return {leaf: v for where, item in items for leaf, v in flattened(item, where).items()}


@pytest.fixture(scope="module")
def two_logs(tmp_path_factory) -> dict[str, Path]:
    """The same completion file through `inspect eval -T samples=` and `heval-inspect score`."""
    work = tmp_path_factory.mktemp("batch")
    samples = completion_file(work / "samples.jsonl")
    task_args = [part for argument in TASK_ARGS for part in ("-T", argument)]
    subprocess.run(
        [BIN / "inspect", "eval", "heval_inspect/humaneval_infilling", "--model", "none",
         "-T", f"samples={samples}", *task_args, "--log-dir", work / "eval", "--display", "none"],
        check=True, capture_output=True,
    )  # fmt: skip
    scored = subprocess.run(
        [BIN / "heval-inspect", "score", samples, "--task", "humaneval_infilling", *task_args,
         "--log-dir", work / "score"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    [eval_log] = (work / "eval").glob("*.eval")
    [score_log] = (work / "score").glob("*.eval")
    assert scored.stdout.strip() == str(score_log)
    return {"eval": eval_log, "score": score_log, "samples": samples, "stderr": scored.stderr}


@pytest.mark.docker
def test_the_log_is_the_one_inspect_eval_writes_field_by_field(two_logs):
    eval_header, eval_samples = comparable(str(two_logs["eval"]))
    score_header, score_samples = comparable(str(two_logs["score"]))
    header_fields = flattened(eval_header)
    assert len(header_fields) > 600  # spec, plan, results (every metric), provenance
    assert flattened(score_header) == header_fields
    rows = two_logs["samples"].read_text().splitlines()
    assert len(eval_samples) == len(score_samples) == len(rows) == 70
    for ours, theirs in zip(score_samples, eval_samples, strict=True):
        assert flattened(ours) == flattened(theirs), ours["key"]
    verdicts = {sample["scores"]["unit_tests"]["metadata"]["verdict"] for sample in eval_samples}
    assert {"passed", "timed out"} < verdicts and any(v.startswith("failed: ") for v in verdicts)


@pytest.mark.docker
def test_report_evals_df_and_export_read_both_logs_alike(two_logs, tmp_path):
    assert report_figures(build_report([str(two_logs["score"])])) == report_figures(
        build_report([str(two_logs["eval"])])
    )
    frame = evals_df([str(two_logs["eval"]), str(two_logs["score"])])
    differing = [
        column for column in frame.columns
        if repr(frame[column].iloc[0]) != repr(frame[column].iloc[1])  # NA equal to NA
    ]  # fmt: skip
    assert set(differing) <= {
        "eval_id", "run_id", "task_id", "log", "created", "started_at", "completed_at",
        "total_time", "metadata",  # the run's key, among the rest of the metadata
    }, differing  # fmt: skip
    assert frame["score_headline_value"].iloc[0] == frame["score_headline_value"].iloc[1]
    exported = [
        export_results(
            str(two_logs[side]), str(two_logs["samples"]), str(tmp_path / side)
        ).read_text()
        for side in ("eval", "score")
    ]
    assert exported[0] == exported[1]


@pytest.mark.docker
def test_a_second_run_of_the_command_finds_the_log_and_runs_nothing(two_logs):
    samples = two_logs["samples"]
    rerun = subprocess.run(
        [BIN / "heval-inspect", "score", samples, "--task", "humaneval_infilling",
         *[part for argument in TASK_ARGS for part in ("-T", argument)],
         "--log-dir", two_logs["score"].parent],
        check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert rerun.stdout.strip() == str(two_logs["score"])
    assert "already has a successful log" in rerun.stderr
    assert "programs in" in two_logs["stderr"]  # the first run said how it went


@pytest.mark.docker
def test_a_killed_run_is_taken_over_without_running_its_flushed_samples_again(tmp_path):
    rows = [
        {"task_id": record["task_id"], "completion": record["canonical_solution"]}
        for record in load_official(SUBSETS["single_line"])
    ]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    command = [BIN / "heval-inspect", "score", samples, "--task", "humaneval_single_line_infilling",
               "--log-dir", tmp_path / "logs"]  # fmt: skip
    first = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    flushed: list = []
    deadline = time.monotonic() + 120
    while len(flushed) < FLUSH_SAMPLES and time.monotonic() < deadline:
        time.sleep(0.05)
        for log in (tmp_path / "logs").glob("*.eval"):
            try:
                flushed = read_eval_log_sample_summaries(str(log))
            except Exception:  # noqa: BLE001, S112  (not yet a whole zip: read it at the next poll)
                continue
    first.send_signal(signal.SIGKILL)
    first.wait()
    [killed] = (tmp_path / "logs").glob("*.eval")
    assert read_eval_log(str(killed), header_only=True).status == "started"
    assert FLUSH_SAMPLES <= len(flushed) < len(rows), "the run ended before it could be killed"
    taken = len(read_eval_log_sample_summaries(str(killed)))

    second = subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    assert f"took over {taken:,} samples" in second.stderr
    assert f"ran {len(rows) - taken:,} programs" in second.stderr
    [log_file] = (tmp_path / "logs").glob("*.eval")  # the killed log is gone
    assert log_file != killed and second.stdout.strip() == str(log_file)
    log = read_eval_log(str(log_file))
    assert log.status == "success"
    assert sorted(str(s.id) for s in log.samples) == sorted(row["task_id"] for row in rows)
    assert all(s.scores["unit_tests"].value["passed"] == 1.0 for s in log.samples)
    assert log.results.scores[0].metrics["pass@1"].value == 1.0
    assert log.results.total_samples == len(rows)


@pytest.mark.parametrize(
    "task_args, says",
    [
        ({"solver": "x"}, "takes no -T solver: the completions are replayed"),
        ({"sandbox": "docker"}, "takes no -T sandbox"),
        ({"fim_format": "starcoder"}, "takes no -T fim_format"),
    ],
)
def test_arguments_that_choose_how_answers_are_made_are_refused(task_args, says, tmp_path):
    with pytest.raises(TaskArgumentError, match=re.escape(says)):
        score_completions(str(tmp_path / "s.jsonl"), "humaneval", task_args, str(tmp_path))


def test_an_unknown_task_names_the_tasks(tmp_path, capsys):
    from heval_inspect.cli import main

    assert main(["score", str(tmp_path / "s.jsonl"), "--task", "mbpp"]) == 1
    error = capsys.readouterr().err
    assert "--task mbpp: not a task of heval_inspect; choose from humaneval," in error


def test_task_arguments_are_read_as_inspect_reads_them(tmp_path, capsys):
    from heval_inspect.cli import _assignments, main

    given = ["k=1,10", "partial=true", "timeout=1.5", "shard=1/4", "memory-limit=512"]
    assert _assignments(given, "-T") == {
        "k": ["1", "10"], "partial": True, "timeout": 1.5, "shard": "1/4", "memory_limit": 512,
    }  # fmt: skip
    assert main(["score", str(tmp_path / "s.jsonl"), "--task", "humaneval", "-T", "k"]) == 1
    assert "-T k: give NAME=VALUE" in capsys.readouterr().err


@pytest.mark.docker
def test_parallel_runs_it_as_shards_whose_report_is_the_whole_runs(two_logs, tmp_path):
    task_args = [part for argument in TASK_ARGS for part in ("-T", argument)]
    subprocess.run(
        [BIN / "heval-inspect", "parallel", "--shards", "2", "--", BIN / "heval-inspect", "score",
         two_logs["samples"], "--task", "humaneval_infilling", *task_args,
         "--log-dir", tmp_path],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    shards = sorted(tmp_path.glob("*.eval"))
    assert len(shards) == 2
    assert {read_eval_log(str(log), header_only=True).eval.task_args["shard"] for log in shards} \
        == {"1/2", "2/2"}  # fmt: skip
    assert report_figures(build_report([str(tmp_path)])) == report_figures(
        build_report([str(two_logs["eval"])])
    )


@pytest.mark.docker
def test_a_run_larger_than_one_log_writes_shards_whose_report_is_the_whole_runs(two_logs, tmp_path):
    task_args = [part for argument in TASK_ARGS for part in ("-T", argument)]
    command = [BIN / "heval-inspect", "score", two_logs["samples"], "--task", "humaneval_infilling",
               *task_args, "--log-dir", tmp_path / "score", "--samples-per-log", "20"]  # fmt: skip
    scored = subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    logs = sorted((tmp_path / "score").glob("*.eval"))
    assert sorted(scored.stdout.split()) == [str(log) for log in logs]
    headers = {str(log): read_eval_log(str(log), header_only=True) for log in logs}
    # 70 samples of 5 problems, at most 20 a log: 4 shards of whole problems, each scored once.
    assert sorted(header.eval.task_args["shard"] for header in headers.values()) == [
        "1/4", "2/4", "3/4", "4/4"
    ]  # fmt: skip
    keys = [(s.id, s.epoch) for log in logs for s in read_eval_log_sample_summaries(str(log))]
    assert len(keys) == len(set(keys)) == 70
    assert report_figures(build_report([str(tmp_path / "score")])) == report_figures(
        build_report([str(two_logs["eval"])])
    )
    # Each is the log of that shard, as `inspect eval -T shard=...` writes it.
    [third] = [log for log, h in headers.items() if h.eval.task_args["shard"] == "3/4"]
    subprocess.run(
        [BIN / "inspect", "eval", "heval_inspect/humaneval_infilling", "--model", "none",
         "-T", f"samples={two_logs['samples']}", *task_args, "-T", "shard=3/4",
         "--log-dir", tmp_path / "eval", "--display", "none"],
        check=True, capture_output=True,
    )  # fmt: skip
    [shard_log] = (tmp_path / "eval").glob("*.eval")
    (our_header, our_samples), (header, samples) = comparable(third), comparable(str(shard_log))
    assert flattened(our_header) == flattened(header)
    assert flattened(our_samples) == flattened(samples)
    # Run again, it finds every log and runs nothing.
    rerun = subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)
    assert sorted(rerun.stdout.split()) == sorted(scored.stdout.split())
    assert rerun.stderr.count("already has a successful log") == 4
    assert "programs in" not in rerun.stderr
    # With one log missing (its run stopped before it, or the log was lost), that shard alone runs.
    Path(third).unlink()
    resumed = subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)
    assert resumed.stderr.count("already has a successful log") == 3
    assert resumed.stderr.count("programs in") == 1
    [new_third] = set((tmp_path / "score").glob("*.eval")) - {Path(log) for log in logs}
    assert read_eval_log(str(new_third), header_only=True).eval.task_args["shard"] == "3/4"
    assert report_figures(build_report([str(tmp_path / "score")])) == report_figures(
        build_report([str(two_logs["eval"])])
    )


@pytest.mark.data
def test_the_logs_of_each_shard_of_a_run_are_the_shards_of_the_whole_run(tmp_path):
    samples = tmp_path / "samples.jsonl"
    rows = [{"task_id": record["task_id"], "completion": record["canonical_solution"]}
            for record in load_official(HUMANEVAL)]  # fmt: skip
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows * 3))  # 164 x 3 samples

    whole = humaneval(samples=str(samples))

    def shards(samples_per_log, shard=None):
        return log_shards(whole, shard, samples_per_log)

    assert shards(492) == [None] and shards(492, "2/2") == ["2/2"]  # one log holds them
    assert shards(50) == [f"{i}/10" for i in range(1, 11)]
    # Two machines (shards 1/2 and 2/2) find the same parts: the 10 shards of the whole run.
    assert shards(50, "1/2") + shards(50, "2/2") == [f"{i}/10" for i in range(1, 11)]
    assert shards(60, "2/3") == [f"{i}/9" for i in range(4, 7)]
    # A shard holds whole problems: never more shards than HumanEval's 164 problems.
    assert shards(1) == [f"{i}/164" for i in range(1, 165)]
    with pytest.raises(TaskArgumentError, match="--samples-per-log 0: give 1 or more"):
        score_completions(str(samples), "humaneval", {}, str(tmp_path), samples_per_log=0)
