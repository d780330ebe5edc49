"""Real logs for the report's tests, made by real `inspect eval` runs of replayed completions.

Two "models" on HumanEval, three epochs each: `canonical` (every canonical answer) and `mutant`,
whose answers follow PATTERN: in each epoch a problem gets its canonical body or a mutant of a
known kind. And a run of `humaneval_infilling` on the tasks of a few problems, two epochs, once
whole and once as four shards.

Their programs (canonical bodies and the mutants below, never a model's) run in the local sandbox
(`sandbox="local"`): the tests that read these logs test the report, which reads what any
sandbox records, so they need no Docker. The sandboxes' own verdicts are tested where they run
(test_sandbox, test_isolation, test_hostile, test_e2e).
"""

import json
import re
from pathlib import Path

from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.tasks import humaneval, humaneval_infilling

EPOCHS = 3
TIMEOUT = 1.0  # seconds: the one program that loops costs this, in both runs alike

# Bodies that fail in a known way, each with the kind the report must give it.
MUTANTS = {
    "wrong": ("    return None\n", "wrong answer"),
    "syntax": ("    return (\n", "syntax error"),
    "indent": ("  return 1\n", "syntax error"),  # IndentationError
    "name": ("    return undefined_name\n", "name error"),
    "runtime": ("    return 1 / 0\n", "other runtime error"),
    "memory": ("    return [0] * (1 << 40)\n", "memory"),
    "killed": ("    import ctypes\n    return ctypes.string_at(0)\n", "killed"),
    "loop": ("    while True:\n        pass\n", "timed out"),
}
# HumanEval problem -> the answer of each epoch: "ok" (canonical) or a mutant.
PATTERN = {
    "HumanEval/0": ("ok", "ok", "ok"),
    "HumanEval/1": ("ok", "ok", "wrong"),
    "HumanEval/2": ("ok", "syntax", "name"),
    "HumanEval/3": ("wrong", "wrong", "wrong"),
    "HumanEval/4": ("ok", "indent", "ok"),
    "HumanEval/5": ("runtime", "memory", "ok"),
    "HumanEval/6": ("killed", "ok", "ok"),
    "HumanEval/7": ("loop", "ok", "ok"),
}
# Four problems (a shard each) with the fewest tasks: 13 each (HumanEval/1 alone has 130).
INFILLING_PROBLEMS = ("HumanEval/2", "HumanEval/7", "HumanEval/15", "HumanEval/16")
INFILLING_EPOCHS = 2
GARBAGE = "<<< not python >>>\n"


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def humaneval_completions(work: Path) -> dict[str, str]:
    """The two models' completion files: row n of a task is its epoch n."""
    records = {r["task_id"]: r for r in load_official(HUMANEVAL)}
    canonical, mutant = [], []
    for epoch in range(EPOCHS):
        for task_id, answers in PATTERN.items():
            right = records[task_id]["canonical_solution"]
            canonical.append({"task_id": task_id, "completion": right})
            answer = answers[epoch]
            mutant.append(
                {"task_id": task_id, "completion": right if answer == "ok" else MUTANTS[answer][0]}
            )
    return {
        "canonical": write_jsonl(work / "canonical.jsonl", canonical),
        "mutant": write_jsonl(work / "mutant.jsonl", mutant),
    }


def infilling_task_ids() -> list[str]:
    return [
        record["task_id"]
        for file in SUBSETS.values()
        for record in load_official(file)
        if re.search(r"HumanEval/\d+", record["task_id"]).group(0) in INFILLING_PROBLEMS
    ]


def infilling_passes(task_id: str, epoch: int) -> bool:
    """The known pass pattern of the infilling run: fails every third (task, epoch)."""
    return (sum(map(ord, task_id)) + epoch) % 3 != 0


def infilling_completions(work: Path) -> str:
    records = {r["task_id"]: r for file in SUBSETS.values() for r in load_official(file)}
    rows = [
        {"task_id": task_id,
         "completion": records[task_id]["canonical_solution"]
         if infilling_passes(task_id, epoch) else GARBAGE}
        for epoch in range(INFILLING_EPOCHS)
        for task_id in infilling_task_ids()
    ]  # fmt: skip
    return write_jsonl(work / "infilling.jsonl", rows)


def run(task, log_dir: Path, **options) -> str:
    [log] = inspect_eval(task, model="none", log_dir=str(log_dir), display="none", **options)
    assert log.status == "success", log.error
    return log.location


def build(work: Path, sandbox: str = "local") -> dict[str, object]:
    """Every log the report's tests read; returns their paths by name."""
    files = humaneval_completions(work)
    logs: dict[str, object] = {}
    for name, samples in files.items():
        logs[name] = run(
            humaneval(samples=samples, partial=True, timeout=TIMEOUT, sandbox=sandbox, k="1,3"),
            work / "humaneval",
            metadata={"label": name},
        )
    samples = infilling_completions(work)
    logs["infilling"] = run(
        humaneval_infilling(samples=samples, partial=True, sandbox=sandbox, k="1,2"),
        work / "infilling-whole",
        tags=["replayed"],
    )
    logs["shards"] = [
        run(
            humaneval_infilling(
                samples=samples, partial=True, sandbox=sandbox, k="1,2", shard=f"{i}/4"
            ),
            work / "infilling-shards",
            tags=["replayed"],
        )
        for i in range(1, 5)
    ]
    return logs


def report_figures(report) -> dict:
    """Every figure a report shows of its one run, by where it shows it."""
    [result] = report.results
    figures = {
        (group, name, bound): (value, stderr)
        for group, named in result.groups.items()
        for name, f in named.items()
        for bound, value, stderr in (("", f.value, f.stderr), ("interval", f.low, f.high))
    }
    figures |= {("all", f"pass@{k}"): (f.value, f.stderr) for k, f in result.pass_at.items()}
    figures |= {("tasks", group): (n, 0.0) for group, n in result.tasks.items()}
    figures |= {
        ("failures", row.subset, kind_): (count, 0.0)
        for row in report.failures
        for kind_, count in row.counts.items()
    }
    figures |= {
        ("gap", row.subset, row.by, row.bucket): (row.pass_at_1.value, row.pass_at_1.stderr)
        for row in report.gaps
    }
    return figures


# Logs whose figures sit at 0 or 1, where an interval's ends meet the figure.
EDGE_SHARD_LIMIT = 10  # tasks per shard: two shards of all-passing tasks, 20 problems
EDGE_FAILING = 3  # all-failing tasks (a number at which Wilson's lower end rounded above 0)


def edge_logs(work: Path, sandbox: str = "local") -> dict[str, list[str]]:
    """Real runs at the edges, by name, each a list of its logs: `all pass, 2 shards` (the
    reference solver, `heval-inspect parallel --shards 2 ... --limit 10`'s runs), `all fail`
    (garbage on a few tasks), `one sample` (the reference on one task)."""
    from heval_inspect.solvers import reference

    records = load_official(HUMANEVAL)[:EDGE_FAILING]
    garbage = write_jsonl(
        work / "garbage.jsonl", [{"task_id": r["task_id"], "completion": GARBAGE} for r in records]
    )
    return {
        "all pass, 2 shards": [
            run(
                humaneval(shard=f"{i}/2", sandbox=sandbox),
                work / "shards",
                solver=reference(),
                limit=EDGE_SHARD_LIMIT,
            )
            for i in (1, 2)
        ],
        "all fail": [run(humaneval(samples=garbage, partial=True, sandbox=sandbox), work / "fail")],
        "one sample": [run(humaneval(sandbox=sandbox), work / "one", solver=reference(), limit=1)],
    }
