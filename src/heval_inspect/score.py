"""`heval-inspect score`: a file of completions made elsewhere, scored at the sandbox's pace.

`inspect eval TASK -T samples=FILE` replays the file through Inspect's sample loop, which costs
its process about 13 ms of CPU per program before any program runs (docs/benchmarks.md). This
command writes the same log without that loop:

- the task is the one `inspect eval` builds (the same task function and arguments: the same
  samples, epochs, metadata, version, scorer and metrics);
- the log's header is Inspect's own: the task run on no sample (`limit=0`), which gives the eval
  spec, plan, provenance (its hooks run) and headline as `inspect eval` writes them;
- each program goes through the scorer's own core (`scorer.score_middle`: assembly, the pool
  sandbox, the verdict, the explanation), as many at a time as the pool has containers;
- each sample is recorded as the replay solver and the scorer record it (input, messages,
  output, store, score, the program in the transcript) and handed to the writer `inspect eval`
  uses, which flushes it to the log file as the run goes; Inspect computes the results
  (`recompute_metrics`, from the header's metrics) from each sample's score alone.

The process keeps of each sample what Inspect's writer keeps until the log is finished (its
summary) and its score, not the whole sample: about as much per sample as `inspect eval` holds.
So that this does not grow with the run, a run of more than SAMPLES_PER_LOG samples writes one
log per part of about that many, in turn, each a shard of the run (`log_shards`), whose logs
`heval-inspect report` merges as it merges any shards. Writing costs about sqrt(n) per sample (see
WRITE_SAMPLES). Each log records the command it came from (`heval_run`): run again, the
command does nothing if a successful log of it is in the log folder, and takes over the samples
an interrupted log of it flushed (see FLUSH_GROWTH for how many can be lost) instead of running
their programs again.
"""

import asyncio
import contextlib
import hashlib
import io
import json
import math
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_async
from inspect_ai.dataset import Sample
from inspect_ai.event import InfoEvent, ScoreEvent
from inspect_ai.log import (
    EvalLog,
    EvalSample,
    read_eval_log,
    read_eval_log_sample_summaries,
    recompute_metrics,
)
from inspect_ai.model import ChatMessageUser
from inspect_ai.scorer import Score

from .arguments import TaskArguments, TaskSettings, settings_of
from .data import problem_for, read_completions
from .errors import Interrupted, TaskArgumentError
from .inspect_internals import EvalRecorder, log_compression_in_one_thread, open_log_file
from .metrics import HEADLINE_STDERR
from .run_logs import logs_by_run
from .sandbox.pool_sandbox import standalone_pool
from .schema import MIDDLE, PASSED, RUN_KEY, SCORER, TASK_PREFIX, EvalMetadata, figures_of
from .scorer import score_middle
from .shard import Shard, parse_shard
from .solvers import replayed
from .tasks import TASKS, problem_of

# Arguments that choose how answers are made or run, which this command does not: it replays
# the completion file in the pool sandbox.
NOT_TAKEN = {
    "samples": "the completion file is the command's first argument",
    "solver": "the completions are replayed",
    "scorer": "the unit tests are the scorer",
    "fim_format": "no model is asked",
    "sandbox": "programs run in the pool sandbox; use `inspect eval -T samples=...` for others",
}
# The -T arguments it takes: humaneval_infilling's own, then those every task takes.
TAKEN = ["subsets"] + [each.name for each in fields(TaskArguments) if each.name not in NOT_TAKEN]
# Inspect's writer compares each new sample with those it holds, and each move of them into its
# working copy of the log with every sample so far; moving them sqrt(n) at a time (at least
# WRITE_SAMPLES) keeps both to about sqrt(n) per sample. Copying the working copy to the log file
# costs in proportion to all the samples so far, so it happens after every tenth more (at least
# FLUSH_SAMPLES): the copies add up to about ten times the log, and an interrupted run loses at
# most a tenth of what it had done.
WRITE_SAMPLES = 200
FLUSH_SAMPLES = 200
FLUSH_GROWTH = 1.1
PROGRESS_SECONDS = 10
# The most samples one log holds (about: shards hold whole problems). Inspect's writer keeps each
# sample's summary until its log is finished (about 15 KB of memory per sample here), and `inspect
# view` loads a log's whole sample list: 10,000 samples are about 150 MB and a list the viewer
# opens in seconds, whatever the size of the run.
SAMPLES_PER_LOG = 10_000


def score_completions(
    samples: str,
    task_name: str,
    task_args: dict[str, Any],
    log_dir: str,
    metadata: dict[str, Any] | None = None,
    progress: bool = True,
    samples_per_log: int = SAMPLES_PER_LOG,
) -> list[str]:
    """Score a completion file as `inspect eval TASK -T samples=FILE` would; the logs written
    (or found already written by an earlier run of the same command): one, or one per shard of
    the run if it has more than `samples_per_log` samples (`log_shards`). `progress`: a line on
    stderr every PROGRESS_SECONDS."""
    function = _task_function(task_name)
    for name, why in NOT_TAKEN.items():
        if name in task_args:
            raise TaskArgumentError(f"heval-inspect score takes no -T {name}: {why}.")
    if samples_per_log < 1:
        raise TaskArgumentError(f"--samples-per-log {samples_per_log}: give 1 or more.")
    whole = function(samples=samples, **{k: v for k, v in task_args.items() if k != "shard"})
    # The limits each program runs under, as the task parsed them: the same for every log.
    settings = settings_of(whole)
    log_compression_in_one_thread()  # a log entry per sample: see inspect_internals
    shards = log_shards(whole, task_args.get("shard"), samples_per_log)
    logs = asyncio.run(
        _run_logs(function, whole, task_name, samples, settings, task_args, shards, log_dir,
                  metadata or {}, progress)
    )  # fmt: skip
    shard = task_args.get("shard")
    _say(headline(logs) + (f", of shard {shard} of the run" if shard else ""))
    return logs


def headline(logs: list[str]) -> str:
    """The run's headline figure and its error bar, as `inspect eval` shows them: the log's own
    results (its first metric, then `stderr`), or for a run written as several logs (shards of
    it), the results Inspect computes with the task's metric from all their samples' scores."""
    log = read_eval_log(logs[0], header_only=True)
    if len(logs) > 1:
        scores = [
            EvalSample(id=summary.id, epoch=summary.epoch, input="", target="",
                       metadata=summary.metadata, scores=summary.scores)
            for each in logs
            for summary in read_eval_log_sample_summaries(each)
        ]  # fmt: skip
        log = log.model_copy(update={"samples": scores})
        recompute_metrics(log)
    metrics = log.results.scores[0].metrics if log.results and log.results.scores else {}
    if not metrics:
        return "no sample was scored"
    name, figure = next(iter(metrics.items()))
    error = metrics[HEADLINE_STDERR].value if HEADLINE_STDERR in metrics else math.nan
    if math.isnan(error):
        return f"{name} {figure.value:.3f} (no standard error from a single problem)"
    return f"{name} {figure.value:.3f} ± {error:.3f} (stderr, clustered by problem)"


def log_shards(whole: Task, shard: str | None, samples_per_log: int) -> list[str | None]:
    """The `shard` argument of each log a run of the task `whole` writes: the one given (or
    none) if the run has at most `samples_per_log` samples; else the given shard i/n (or 1/1) as
    m shards of n x m, (i - 1) x m + 1 ... i x m, with m such that each holds about
    `samples_per_log`.

    m comes from the size of the whole run, not of shard i, so that every machine of a sharded
    run finds the same m and the parts of its n shards are the n x m shards of the run, each
    scored once. A shard holds whole problems, so there are at most as many as problems.
    """
    given = parse_shard(shard) or Shard(1, 1)
    run_samples = len(whole.dataset) * (whole.epochs or 1)
    problems = len({problem_of(sample) for sample in whole.dataset})
    parts = min(math.ceil(run_samples / (given.count * samples_per_log)), problems // given.count)
    if parts <= 1:
        return [shard]
    first = (given.index - 1) * parts
    return [f"{first + part}/{given.count * parts}" for part in range(1, parts + 1)]


async def _run_logs(
    function: Callable[..., Task],
    whole: Task,
    task_name: str,
    samples: str,
    settings: TaskSettings,
    task_args: dict[str, Any],
    shards: list[str | None],
    log_dir: str,
    metadata: dict[str, Any],
    progress: bool,
) -> list[str]:
    """Each shard's log in turn (one pool for all), skipping those already written; `whole`:
    the task unsharded, which is the one run when there is one log and no shard."""
    runs = logs_by_run(log_dir)
    logs = []
    for number, shard in enumerate(shards, start=1):
        shard_args = task_args | ({"shard": shard} if shard else {})
        if len(shards) > 1:
            _say(f"log {number} of {len(shards)} (-T shard={shard})")
        task = function(samples=samples, **shard_args) if shard else whole
        key = _run_key(task_name, shard_args, task)
        earlier = [(log.removeprefix("file://"), header.status)
                   for log, header in runs.get(key, [])]  # fmt: skip
        if done := [log for log, status in earlier if status == "success"]:
            _say(f"this command already has a successful log: {done[0]}")
            logs.append(done[0])
            continue
        # This log's completions, from the file's one read (the task's check of it).
        completions = read_completions(samples, only={str(sample.id) for sample in task.dataset})
        interrupted = [log for log, _ in earlier]
        logs.append(
            await _run(task, completions, settings, log_dir, metadata | {RUN_KEY: key},
                       interrupted, progress)
        )  # fmt: skip
    return logs


def _task_function(task_name: str) -> Callable[..., Task]:
    name = task_name.removeprefix(TASK_PREFIX)
    if name not in TASKS:
        raise TaskArgumentError(
            f"--task {task_name}: not a task of heval_inspect; choose from {', '.join(TASKS)}."
        )
    return TASKS[name]


def _run_key(task_name: str, task_args: dict, task: Task) -> str:
    """What makes two runs the same: the task, its arguments and the content of the files it
    reads (their checksums, which the task's provenance holds already)."""
    files = EvalMetadata.read(task.metadata).provenance.data_files
    described = json.dumps(
        [task_name.removeprefix(TASK_PREFIX), sorted(task_args.items()),
         [file.sha256 for file in files]],
        default=str,
    )  # fmt: skip
    return hashlib.sha256(described.encode()).hexdigest()[:16]


async def _run(
    task: Task,
    completions: dict[str, list[str]],
    settings: TaskSettings,
    log_dir: str,
    metadata: dict[str, Any],
    interrupted: list[str],
    show_progress: bool,
) -> str:
    pool = (await standalone_pool()).pool  # started first: it builds the image the header names
    started = _now()
    log = await _header(task, metadata)
    [scorer] = log.eval.scorers or []
    recorder = EvalRecorder(log_dir)
    location = await recorder.log_init(
        log.eval, str(Path(log_dir) / Path(log.location).name), clean=True
    )
    await recorder.log_start(log.eval, log.plan)
    writer = Writer(recorder, log)
    progress = Progress(len(task.dataset) * (task.epochs or 1), show_progress)
    try:
        for old in interrupted:
            # Samples an interrupted run of this command flushed: taken over, not run again.
            # Read in one pass over the log (read_eval_log_samples reads the log's whole index
            # again for each sample: time that grows with the square of the samples).
            for sample in read_eval_log(old).samples or []:
                await writer.add(sample)
        if writer.scores:
            _say(f"took over {len(writer.scores):,} samples from {', '.join(interrupted)}")
        progress.start(len(writer.scores))
        pending = ((s, e) for s, e in _jobs(task) if (str(s.id), e) not in writer.done)

        async def work() -> None:
            for sample, epoch in pending:
                completion = completions[str(sample.id)][epoch - 1]
                scored = await _sample(sample, epoch, completion, settings, scorer.options)
                await writer.add(scored)
                progress.add(scored)

        try:
            async with asyncio.TaskGroup() as workers:  # one failing stops the others
                # As many programs as the pool holds (running, or next in an executor's input),
                # and one more per container: while a worker records a sample, another has its
                # program in that container's place, which never waits for this process.
                for _ in range(pool.capacity + pool.size):
                    workers.create_task(work())
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None  # the one that stopped the others
    except asyncio.CancelledError:  # Ctrl-C
        await writer.finish(started, "cancelled")
        raise Interrupted(
            f"interrupted (Ctrl-C): {location} keeps the samples scored so far; run the same "
            f"command again to score the rest."
        ) from None
    except BaseException:
        await writer.finish(started, "cancelled")
        raise
    await writer.finish(started, "success")
    for old in interrupted:
        Path(old).unlink(missing_ok=True)  # its samples are in the new log
    progress.done(location)
    return location


async def _header(task: Task, metadata: dict[str, Any]) -> EvalLog:
    """The log as Inspect begins it for the task (eval spec, plan, provenance), to which the
    samples are then added: the task run on no sample, its config and dataset those of the
    whole task."""
    # Inspect's header of this task (run on no sample), written aside and thrown away; its
    # display (a run of no sample) is left out: the progress lines say what happens.
    with tempfile.TemporaryDirectory() as aside, contextlib.redirect_stdout(io.StringIO()):
        header = await eval_async(task, model="none", limit=0, log_dir=aside, metadata=metadata)
    if not header or header[0].status == "cancelled":
        # Inspect ends a run that Ctrl-C stopped without raising (with no log, or a cancelled one).
        raise Interrupted("interrupted (Ctrl-C) before any program ran; nothing was written.")
    [log] = header
    log.eval.config.limit = None
    # Every sample of ours has an id (its task's).
    log.eval.dataset.sample_ids = [sample.id for sample in task.dataset if sample.id is not None]
    return log


class Writer:
    """The log being written: samples flushed to the file as they come, scores kept for the
    results."""

    def __init__(self, recorder: EvalRecorder, log: EvalLog) -> None:
        self.recorder, self.log = recorder, log
        self.file = open_log_file(recorder, log.eval)
        self.scores: list[EvalSample] = []
        self.done: set[tuple[str, int]] = set()
        self.flush_at = FLUSH_SAMPLES
        self.written = 0  # samples moved into the working copy

    async def add(self, sample: EvalSample) -> None:
        await self.recorder.log_sample(self.log.eval, sample)
        # What the metrics read of a sample: its id, epoch, metadata and score's value.
        score = sample.scores[SCORER] if sample.scores else Score(value={})
        self.scores.append(
            EvalSample(
                id=sample.id, epoch=sample.epoch, input="", target="",
                metadata=sample.metadata, scores={SCORER: Score(value=score.value,
                                                                metadata=score.metadata)},
            )
        )  # fmt: skip
        self.done.add((str(sample.id), sample.epoch))
        count = len(self.scores)
        if count >= self.flush_at:
            await self.recorder.flush(self.log.eval)
            self.flush_at = max(self.flush_at + FLUSH_SAMPLES, int(self.flush_at * FLUSH_GROWTH))
            self.written = count
        elif count - self.written >= max(WRITE_SAMPLES, math.isqrt(count)):
            await self.file.write_buffered_samples()
            self.written = count

    async def finish(self, started: str, status: str) -> None:
        results = self.log.model_copy(update={"samples": self.scores})
        recompute_metrics(results)
        self.log.stats.started_at, self.log.stats.completed_at = started, _now()
        await self.recorder.log_finish(
            self.log.eval,
            status,  # type: ignore[arg-type]
            self.log.stats,
            results.results,
            results.reductions,
        )


def _jobs(task: Task) -> Iterator[tuple[Sample, int]]:
    """Every sample of the task in every epoch."""
    for sample in task.dataset:
        for epoch in range(1, (task.epochs or 1) + 1):
            yield sample, epoch


async def _sample(
    sample: Sample,
    epoch: int,
    completion: str,
    settings: TaskSettings,
    scorer_args: dict[str, Any] | None,
) -> EvalSample:
    """One sample as `inspect eval` records it with the replay solver and the unit tests."""
    started, clock = _now(), time.monotonic()
    problem = problem_for(str(sample.id), sample.metadata or {})
    target = str(sample.target)
    scored = await score_middle(
        problem, completion, target, settings.timeout, settings.memory_limit
    )
    seconds = round(time.monotonic() - clock, 3)
    output, message = replayed(completion)
    return EvalSample(
        id=sample.id or "",
        epoch=epoch,
        input=sample.input,
        target=target,
        messages=[ChatMessageUser(content=str(sample.input), source="input"), message],
        output=output,
        scores={SCORER: scored.score},
        metadata=sample.metadata or {},
        store={MIDDLE: completion},
        events=[
            InfoEvent(source=SCORER, data=scored.program),
            ScoreEvent(score=scored.score, target=target, scorer=SCORER, scorer_args=scorer_args),
        ],
        model_usage={},
        started_at=started,
        completed_at=_now(),
        total_time=seconds,
        working_time=seconds,
        uuid=uuid.uuid4().hex,
        error_retries=[],
        turn_count=0,
    )


class Progress:
    """A line on stderr every PROGRESS_SECONDS, and at the end."""

    def __init__(self, programs: int, shown: bool) -> None:
        self.programs, self.scored, self.passed, self.shown = programs, 0, 0, shown
        _say(f"{programs:,} programs")

    def start(self, taken_over: int) -> None:
        self.scored = self.first = taken_over
        self.started = self.said = time.monotonic()

    def add(self, sample: EvalSample) -> None:
        self.scored += 1
        self.passed += figures_of((sample.scores or {})[SCORER].value)[PASSED] == 1.0
        if self.shown and time.monotonic() - self.said >= PROGRESS_SECONDS:
            self.said = time.monotonic()
            rate = (self.scored - self.first) / (self.said - self.started)
            _say(
                f"{self.scored:,} of {self.programs:,} programs, {rate:.0f}/s, about "
                f"{(self.programs - self.scored) / rate:.0f} s left"
            )

    def done(self, location: str) -> None:
        seconds = time.monotonic() - self.started
        ran = self.scored - self.first
        _say(
            f"ran {ran:,} programs in {seconds:.1f} s ({ran / seconds:.0f}/s), {self.passed:,} "
            f"passed: {location}"
        )


def _say(text: str) -> None:
    print(f"heval-inspect score: {text}", file=sys.stderr, flush=True)


def _now() -> str:
    return datetime.now(UTC).isoformat()
