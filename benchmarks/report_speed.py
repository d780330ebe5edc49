"""How long `heval-inspect report` takes, and how much memory, on the whole infilling group.

Input: two "models" on all 8,652 tasks of `humaneval_infilling`, 3 epochs each (`--epochs`), so
2 x 25,956 samples, each run written as 8 shard logs (`--shards`; 1 for one log per run); the
report merges the shards, compares the runs (paired differences), classifies every verdict and
draws every plot. The report's command runs in a child process, timed from start to exit, twice:
first with an empty cache folder (every log read through Inspect's API), then again (the logs'
tables kept by the first); its peak memory is sampled every 50 ms over the command and the
processes it starts.

How the input logs are made without scoring 51,912 programs (hours): one real run of
`humaneval_infilling` on a few tasks (`inspect eval`, replayed canonical answers, `-T
sandbox=local`: 4 canonical programs on this machine, no Docker) gives a real log header
(task, version, provenance) and a real sample; every sample of the big logs is that sample with
the task's real input (the chat prompt), target, metadata and a score as the scorer writes it
(value, answer, explanation with the whole program, metadata with verdict, reason and error),
passing or failing in a fixed pseudo-random pattern (model A about 70% pass, model B about 60%,
failures of every kind), written with Inspect's `write_eval_log`, each shard with the metadata
`-T shard=i/n` records. The samples have no events, so the logs are smaller than real ones, but the
report reads only each log's header and sample summaries, which are as a real run writes them.
Building takes a few minutes with 8 shards; with `--shards 1` about 20 minutes, as `write_eval_log`
takes time that grows with the square of a log's samples. The logs are kept (`--work`) and reused.

    python benchmarks/report_speed.py                   # build (once) and time the report
    python benchmarks/report_speed.py --epochs 5 --work /tmp/report-bench
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import psutil  # noqa: E402  (Inspect's dependency)
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import EvalSample, read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput  # noqa: E402
from inspect_ai.scorer import Score  # noqa: E402

from heval_inspect.data import SUBSETS, load_official  # noqa: E402
from heval_inspect.explanation import explain, fenced  # noqa: E402
from heval_inspect.prompts import chat_prompt  # noqa: E402
from heval_inspect.schema import (  # noqa: E402
    MEAN_FIGURES,
    MIDDLE,
    PASSED,
    SHARD_KEY,
    Cause,
    Execution,
    SampleMetadata,
    ShardRecord,
)
from heval_inspect.scorer import assemble_program  # noqa: E402
from heval_inspect.shard import split  # noqa: E402
from heval_inspect.tasks import humaneval_infilling, problem_id  # noqa: E402

# Failures of each kind: (verdict, reason, error, share among failures).
# (status, cause, reason, error, share): the failures of a chat model's run, in rough shares.
FAILURES = [
    ("failed", Cause.WRONG_ANSWER, "", "AssertionError", 0.55),
    ("failed", Cause.SYNTAX_ERROR, "invalid syntax (<string>, line 12)", "SyntaxError", 0.15),
    ("failed", Cause.NAME_ERROR, "name 'result' is not defined", "NameError", 0.1),
    ("failed", Cause.EXCEPTION, "list index out of range", "IndexError", 0.1),
    ("timed out", Cause.TIME_LIMIT, "time limit of 3s", "", 0.05),
    ("failed", Cause.MEMORY, "", "MemoryError", 0.03),
    ("timed out", Cause.SIGNAL, "killed by signal SIGSEGV before the tests completed", "", 0.02),
]  # fmt: skip
MODELS = {"model-a": 0.7, "model-b": 0.6}


def template(work: Path) -> str:
    """A real log of `humaneval_infilling` on 4 tasks, replaying their canonical answers."""
    records = [r for file in SUBSETS.values() for r in load_official(file)[:1]]
    samples = work / "template.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"]}) + "\n"
            for r in records
        )
    )
    [log] = inspect_eval(
        humaneval_infilling(samples=str(samples), partial=True, sandbox="local"),
        model="none",
        log_dir=str(work / "template"),
        display="none",
    )
    assert log.status == "success", log.error
    return log.location


def build(work: Path, epochs: int, shards: int) -> list[str]:
    """The two big runs' logs, each as `shards` shard logs (made once per epochs and shards)."""
    out = work / (f"logs-{epochs}-epochs" + ("" if shards == 1 else f"-{shards}-shards"))
    done = sorted(out.glob("*.eval"))
    if len(done) == len(MODELS) * shards:
        return [str(path) for path in done]
    out.mkdir(parents=True, exist_ok=True)
    base = read_eval_log(template(work))
    model = base.samples[0]
    files = [(file, name) for name, file in SUBSETS.items()]
    read = [SampleMetadata.read(s.metadata, s.id) for s in base.samples]
    sources = {each.subset: each.source for each in read}
    written = []
    for name, pass_rate in MODELS.items():
        chance = random.Random(name)
        samples = []
        for file, subset in files:
            for record in load_official(file):
                prompt, suffix = record["prompt"], record["suffix"]
                middle = record["canonical_solution"]
                program = assemble_program(
                    prompt, middle, suffix, record["test"], record["entry_point"]
                )
                question = chat_prompt(prompt, suffix)
                for epoch in range(1, epochs + 1):
                    if chance.random() < pass_rate:
                        status, cause, reason, error = "passed", Cause.PASSED, "", ""
                    else:
                        status, cause, reason, error, _ = chance.choices(
                            FAILURES, weights=[f[4] for f in FAILURES]
                        )[0]
                    execution = Execution(
                        status, cause, reason, 0, 0.05, 0.06, 0, "", {}, error=error
                    )
                    passed = float(cause == Cause.PASSED)
                    score = Score(
                        value={PASSED: passed} | dict.fromkeys(MEAN_FIGURES, passed),
                        answer=fenced(middle),
                        explanation=explain(execution, program, len(prompt), len(middle)),
                        metadata=execution.score_metadata(),
                    )
                    samples.append(
                        model.model_copy(
                            update={
                                "id": record["task_id"],
                                "epoch": epoch,
                                "input": question,
                                "target": middle,
                                "metadata": SampleMetadata(
                                    subset, problem_id(record["task_id"]), sources[subset]
                                ).metadata(),
                                "messages": [
                                    ChatMessageUser(content=question),
                                    ChatMessageAssistant(content=fenced(middle, "python")),
                                ],
                                "output": ModelOutput.from_content("none", fenced(middle)),
                                "scores": {"unit_tests": score},
                                "store": {MIDDLE: middle},
                                "events": [],
                            }
                        )
                    )

        def problem_of(sample: EvalSample) -> str:
            return SampleMetadata.read(sample.metadata, sample.id).problem_id

        parts = split(samples, shards, problem_of)
        for index, part in enumerate(parts, start=1):
            log = base.model_copy(deep=True)
            log.samples = part
            log.eval.metadata["label"] = name
            log.eval.config.epochs = epochs
            log.results = None  # the report computes every figure from the samples
            if shards > 1:  # as `-T shard=i/n` records it (shard.apply_shard)
                log.eval.task_args["shard"] = f"{index}/{shards}"
                log.eval.metadata[SHARD_KEY] = ShardRecord(
                    index=index, count=shards,
                    tasks=len({s.id for s in part}),
                    problems=list(dict.fromkeys(problem_of(s) for s in part)),
                    all_tasks=len({s.id for s in samples}),
                    all_problems=len({problem_of(s) for s in samples}),
                ).metadata()  # fmt: skip
            path = out / f"{name}-{index}-of-{shards}.eval"
            write_eval_log(log, str(path))
            written.append(str(path))
            print(f"built {path} ({len(part)} samples)", flush=True)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--shards",
        type=int,
        default=8,
        help="write each run as this many shard logs (1: one log per run, which takes Inspect's "
        "write_eval_log about 20 minutes for 26k samples; 8: about 2)",
    )
    parser.add_argument("--work", default=str(ROOT / "logs" / "report-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    logs = build(work, args.epochs, args.shards)
    print(f"input logs ready in {time.monotonic() - started:.1f} s: {', '.join(logs)}")
    command = [
        str(Path(sys.executable).with_name("heval-inspect")), "report", *logs,
        "--out", str(work / "report"), "--baseline", "model-a",
    ]  # fmt: skip
    print("command:", " ".join(command), flush=True)
    tasks = sum(len(load_official(file)) for file in SUBSETS.values())
    samples = (
        f"2 runs x {tasks:,} tasks x {args.epochs} epochs ({2 * tasks * args.epochs:,} samples)"
    )
    with tempfile.TemporaryDirectory() as cache:
        # The report keeps each log's table of samples in the user's cache folder: a new,
        # empty one, so that the first report reads every log and the second reads none.
        environment = {**os.environ, "XDG_CACHE_HOME": cache}
        for attempt in ("first report on these logs (reads them all)",
                        "the same report again (the logs' tables kept by the first)"):  # fmt: skip
            seconds, total, largest, output = _timed(command, environment)
            if attempt.startswith("first"):
                print(output[-2500:])
            print(
                f"{attempt}: {samples} in {len(logs)} logs: {seconds:.1f} s, peak memory "
                f"{total / 2**20:.0f} MiB (all of its processes together, sampled every 50 ms; "
                f"the largest process alone: {largest / 2**20:.0f} MiB)",
                flush=True,
            )


def _timed(command: list[str], environment: dict[str, str]) -> tuple[float, int, int, str]:
    """Wall seconds, peak memory (all processes, largest process) and output of a command."""
    started = time.monotonic()
    total = largest = 0
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        report = subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True, env=environment)
        while report.poll() is None:
            sizes = _tree_rss(report.pid)
            total, largest = max(total, sum(sizes)), max([largest, *sizes])
            time.sleep(0.05)
        seconds = time.monotonic() - started
        stdout.seek(0), stderr.seek(0)
        output, errors = stdout.read(), stderr.read()
    if report.returncode != 0:
        sys.exit(f"the report failed:\n{output[-3000:]}\n{errors[-3000:]}")
    return seconds, total, largest, output


def _tree_rss(pid: int) -> list[int]:
    """Resident memory of a process and of each of its children, in bytes (none once ended)."""
    try:
        process = psutil.Process(pid)
        return [p.memory_info().rss for p in [process, *process.children(recursive=True)]]
    except psutil.Error:
        return []


if __name__ == "__main__":
    main()
