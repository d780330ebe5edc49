"""The shipped Slurm example on a real Slurm cluster (`.ci/slurm-up` starts one of one node).

`examples/slurm/heval-shards.sbatch` is submitted unchanged, set only through its documented
parameters and sbatch's own options: an array of 4 jobs, each running 2 shards of
`humaneval_infilling` replaying a file of canonical and wrong completions. One array task is
requeued while it runs (`scontrol requeue`), as a failed node's would be; it runs again. Every
shard must end with a successful log, and `heval-inspect report` over the log folder must give
the unsharded run's figures.
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import list_eval_logs, read_eval_log

from heval_inspect.data import SUBSETS, load_official
from heval_inspect.report import build_report
from heval_inspect.schema import ShardRecord
from heval_inspect.tasks import humaneval_infilling

from .report_logs import report_figures

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

SCRIPT = Path(__file__).parents[1] / "examples" / "slurm" / "heval-shards.sbatch"
JOBS, SHARDS_PER_JOB = 4, 2
PROBLEMS = [f"HumanEval/{n}" for n in range(10)]  # at least a problem per shard
REQUEUED = 3  # the array task interrupted once
WHOLE_LINES = ("SingleLineInfilling/", "MultiLineInfilling/")  # subsets whose gaps are whole lines
WAIT_SECONDS = 1200
# A line that sleeps a second once per program, however often the tests call its function.
SLEEP_ONCE = "'_slept' in globals() or globals().update(_slept=__import__('time').sleep(1))"


def completions(path: Path, slow: set[str] = frozenset()) -> str:
    """Every infilling task of PROBLEMS: its canonical code, or for every third task none; the
    `slow` tasks' programs sleep a second first (in the requeued shards, so that it is
    interrupted while they run)."""
    rows = []
    for file in SUBSETS.values():
        for i, record in enumerate(load_official(file)):
            if re.search(r"HumanEval/\d+", record["task_id"])[0] not in PROBLEMS:
                continue
            code = "" if i % 3 == 0 else record["canonical_solution"]
            if record["task_id"] in slow:
                indent = re.match(r"[ \t]*", code)[0]
                code = f"{indent}{SLEEP_ONCE}\n{code}"
            rows.append({"task_id": record["task_id"], "completion": code})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def slow_tasks(samples: str) -> set[str]:
    """Five tasks of each shard the requeued array task runs whose gap is whole lines and which
    are given a canonical answer (so that a line before it is still Python)."""
    first = (REQUEUED - 1) * SHARDS_PER_JOB + 1
    slow = set()
    for index in range(first, first + SHARDS_PER_JOB):
        task = humaneval_infilling(
            samples=samples, partial=True, shard=f"{index}/{JOBS * SHARDS_PER_JOB}"
        )
        ids = [str(s.id) for s in task.dataset if str(s.id).startswith(WHOLE_LINES)]
        answered = {
            row["task_id"]
            for row in map(json.loads, Path(samples).read_text().splitlines())
            if row["completion"]
        }
        slow |= set([i for i in ids if i in answered][:5])
    return slow


def job_states(job: str) -> dict[int, dict[str, str]]:
    """Each array task's JobState, Restarts, StartTime and EndTime, as scontrol shows them."""
    shown = subprocess.run(
        ["scontrol", "show", "job", "-o", job], capture_output=True, text=True, check=True
    ).stdout
    states = {}
    for line in shown.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("ArrayTaskId", "").isdigit():
            states[int(fields["ArrayTaskId"])] = fields
    return states


def wait_until(condition, what: str, seconds: float = WAIT_SECONDS, poll: float = 2.0):
    deadline = time.monotonic() + seconds
    while not (result := condition()):
        assert time.monotonic() < deadline, f"no {what} after {seconds:g} s"
        time.sleep(poll)
    return result


def test_the_slurm_example_runs_every_shard_on_a_real_cluster(tmp_path):
    samples = completions(tmp_path / "samples.jsonl")
    slow = slow_tasks(samples)
    assert len(slow) == 5 * SHARDS_PER_JOB
    samples = completions(tmp_path / "samples.jsonl", slow)
    [whole] = inspect_eval(
        humaneval_infilling(samples=samples, partial=True),
        model="none", log_dir=str(tmp_path / "whole"), display="none",
    )  # fmt: skip
    assert whole.status == "success", whole.error
    logs = tmp_path / "logs"
    parameters = {
        "MODEL": "none",
        "LOG_DIR": str(logs),
        "SHARDS_PER_NODE": str(SHARDS_PER_JOB),
        "HEVAL_VENV": sys.prefix,
        "EVAL_ARGS": f"-T samples={samples} -T partial=true",
    }
    started = time.monotonic()
    job = subprocess.run(
        ["sbatch", "--parsable", f"--array=1-{JOBS}", "--cpus-per-task=2", "--time=00:20:00",
         f"--chdir={tmp_path}", f"--output={tmp_path}/heval-%A_%a.out", str(SCRIPT)],
        env=os.environ | parameters, capture_output=True, text=True, check=True,
    ).stdout.strip().split(";")[0]  # fmt: skip

    # Once both of the requeued task's shards have started their logs (the earlier tasks' are
    # done by then: one array task at a time fits the node), interrupt it.
    wait_until(
        lambda: len(list(logs.glob("*.eval"))) >= REQUEUED * SHARDS_PER_JOB,
        f"array task {REQUEUED}'s logs",
        poll=0.2,
    )
    subprocess.run(["scontrol", "requeue", f"{job}_{REQUEUED}"], check=True)
    states = wait_until(
        lambda: (s := job_states(job))
        and all(s.get(t, {}).get("JobState") in {"COMPLETED", "FAILED", "CANCELLED"}
                for t in range(1, JOBS + 1))
        and s,
        "end of every array task",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    transcript = {
        task: (s["JobState"], s["Restarts"], s["StartTime"], s["EndTime"])
        for task, s in sorted(states.items())
    }
    print(f"\nslurm job {job}: {elapsed:.0f} s from sbatch to the last end; {transcript}")
    outputs = {p.name: p.read_text() for p in tmp_path.glob("heval-*.out")}
    assert {s["JobState"] for s in states.values()} == {"COMPLETED"}, (transcript, outputs)
    assert states[REQUEUED]["Restarts"] == "1", transcript

    # Every shard has one successful log; the interrupted attempt's logs are not successful.
    by_shard: dict[int, list[str]] = {}
    for info in list_eval_logs(str(logs)):
        header = read_eval_log(info.name, header_only=True)
        shard = ShardRecord.from_metadata(header.eval.metadata.get("shard"))
        assert shard and shard.count == JOBS * SHARDS_PER_JOB
        by_shard.setdefault(shard.index, []).append(header.status)
    print(f"logs by shard: {by_shard}")
    assert set(by_shard) == set(range(1, JOBS * SHARDS_PER_JOB + 1))
    assert all(statuses.count("success") == 1 for statuses in by_shard.values()), by_shard
    requeued = range((REQUEUED - 1) * SHARDS_PER_JOB + 1, REQUEUED * SHARDS_PER_JOB + 1)
    assert all(len(by_shard[index]) == 2 for index in requeued), by_shard  # one interrupted

    merged, unsharded = build_report([str(logs)]), build_report([whole.location])
    [run] = merged.runs
    assert run.shards == f"1-{JOBS * SHARDS_PER_JOB} of {JOBS * SHARDS_PER_JOB}"
    expected, got = report_figures(unsharded), report_figures(merged)
    assert set(got) == set(expected)
    for key, (value, spread) in expected.items():
        assert got[key][0] == pytest.approx(value, abs=1e-12), key
        assert got[key][1] == pytest.approx(spread, abs=1e-12, nan_ok=True), key
    ignored = [note for note in run.notes if "ignored" in note]
    assert len(ignored) == sum(len(s) - 1 for s in by_shard.values()), run.notes
