"""Logs into runs: one tidy table of scored samples per run, the shards of a run merged.

Logs are read with Inspect's own API: each log's header (`read_eval_log(header_only=True)`) and
its sample summaries (`read_eval_log_sample_summaries`), which hold every sample's id, epoch,
metadata, target and scores (score metadata strings shortened to 1,000 characters, which the
verdict and the exception's class fit in). Nothing else of a sample is read, and a log's table of
samples is kept (`cache`) so that the next report on the same log does not parse it again.

A run is named, in this order, by the eval metadata `label` (`inspect eval ... --metadata
label=NAME`), else its model, else (a run with `--model none`: the reference solver or a replayed
completion file) its first tag (`--tags NAME`), else the completion file's name, else `reference`.

The logs of one run's shards (`-T shard=i/n`: the same name, task, version, problem and
completion files, limits and arguments but the shard) are merged into one run, after checking
that they are shards 1 ... n of n, each once, with no task in two of them.

A shard (or an unsharded run) retried after a failed log (`inspect eval-retry`, or run again) has
several logs: the successful one counts, and the others (status "error", "cancelled" or
"started") are ignored, each named in the run's notes. A run (or shard) run again after it
succeeded has several successful logs: the newest (by when it started) counts, and one note names
the older ones, left out. Several logs of which none is successful leave nothing to choose: they
are refused. A run made both whole and in shards (the same run, once with `inspect eval` and once
with `heval-inspect parallel`): the newer of its successful whole log and its complete shards
(from the first shard's start) counts, and a note names the logs set aside; refused only when
neither is complete.
"""

import hashlib
import multiprocessing
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np
from inspect_ai.log import (
    EvalLog,
    list_eval_logs,
    read_eval_log,
    read_eval_log_sample_summaries,
)

from ..errors import DataError
from ..host import usable_cores
from ..metrics import parse_ks
from ..schema import (
    MEAN_FIGURES,
    ORIGINAL,
    ORIGINAL_VARIANT,
    PASSED,
    SCORER,
    TASK_PREFIX,
    DataFile,
    EvalMetadata,
    SampleMetadata,
    ShardRecord,
    VariantId,
    cause_of,
    completion_file_of,
    is_ours,
)
from . import cache

# Logs of more bytes than this in all (a few thousand samples, seconds of parsing) are read by
# several processes (28 MiB of real logs, 8,652 samples: 7.0 s in two processes, 9.6 s in one).
PARALLEL_BYTES = 8 << 20
NO_MODEL = "none/none"
T = TypeVar("T")
# The code that makes a log's table of samples: a kept table made by other code is not used.
READER = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


class ReportError(DataError):
    """The logs cannot make the report asked for; the message says why and what to do."""


@dataclass
class Run:
    """One run (its shards merged): who, what, under which conditions, and its samples."""

    name: str
    model: str
    task: str
    version: str  # "N-X"
    comparability: int  # N
    problems_sha256: tuple[str, ...]
    completions_sha256: tuple[str, ...]
    timeout: float | None
    memory_bytes: int | None
    ks: list[int]
    per_subset: bool
    files: list[str]
    shards: str = ""  # "1-4 of 4" when merged from shards
    problem_files: list[DataFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # One row per scored (task, epoch), in task order (see `Samples`).
    samples: "Samples" = field(kw_only=True)
    # -T variant: the tasks as they are, or a variant (variants.py), and its generator's version
    variant: VariantId = ORIGINAL_VARIANT

    @property
    def label(self) -> str:
        """The name the report shows: the run's name, its task version and its variant."""
        variant = "" if self.variant.name == ORIGINAL else f", {self.variant.name}"
        return f"{self.name} ({self.task} {self.version}{variant})"


@dataclass(frozen=True)
class Log:
    """One log file: its run (before merging), Inspect's status of it ("success", "error",
    "cancelled" or "started") and when the run started. A shard's log is a ShardLog."""

    run: Run
    status: str
    started: datetime

    @property
    def file(self) -> str:
        return self.run.files[0]

    def described(self) -> str:
        return f"{self.file} (status {self.status!r})"


@dataclass(frozen=True)
class ShardLog(Log):
    """One log file of a shard (`-T shard=i/n`): a log and its shard's record."""

    shard: ShardRecord


AnyLog = TypeVar("AnyLog", bound=Log)

COLUMNS = {
    "task_id": str, "epoch": int, "subset": str, "problem": str,
    "passed": float, "exact_match": float, "exact_match_stripped": float,  # 0.0 or 1.0
    "cause": object,  # how the program ended: a schema.Cause value
    "target": object,  # the canonical gap
}  # fmt: skip


@dataclass
class Samples:
    """One row per scored sample (task and epoch), sorted by task id and epoch, as columns (the
    names and types of COLUMNS); and how many samples ended in an error, with no verdict."""

    task_id: np.ndarray
    epoch: np.ndarray
    subset: np.ndarray
    problem: np.ndarray
    passed: np.ndarray
    exact_match: np.ndarray
    exact_match_stripped: np.ndarray
    cause: np.ndarray
    target: np.ndarray
    unscored: int = 0

    def __len__(self) -> int:
        return len(self.task_id)

    @classmethod
    def from_rows(cls, rows: list[tuple], unscored: int) -> "Samples":
        """From rows of values in COLUMNS' order."""
        values = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
        columns: dict[str, np.ndarray] = {
            name: np.array(column, dtype=kind)
            for (name, kind), column in zip(COLUMNS.items(), values, strict=True)
        }
        return cls._sorted(columns, unscored)

    def table(self) -> dict:
        """As plain data (the cache's JSON)."""
        columns = {name: getattr(self, name).tolist() for name in COLUMNS}
        return {"columns": columns, "unscored": self.unscored}

    @classmethod
    def from_table(cls, table: dict) -> "Samples":
        columns: dict[str, np.ndarray] = {
            name: np.array(table["columns"][name], dtype=kind) for name, kind in COLUMNS.items()
        }
        return cls(**columns, unscored=table["unscored"])

    @classmethod
    def concatenate(cls, parts: list["Samples"]) -> "Samples":
        columns = {name: np.concatenate([getattr(p, name) for p in parts]) for name in COLUMNS}
        return cls._sorted(columns, sum(part.unscored for part in parts))

    @classmethod
    def _sorted(cls, columns: dict[str, np.ndarray], unscored: int) -> "Samples":
        order = np.lexsort((columns["epoch"], columns["task_id"]))
        return cls(**{name: column[order] for name, column in columns.items()}, unscored=unscored)


# The files Inspect writes its logs as.
LOG_SUFFIXES = (".eval", ".json")


def log_files(paths: Iterable[str]) -> list[str]:
    """The log files named, and those in the folders named (recursively), in a stable order."""
    files: list[str] = []
    for path in paths:
        if Path(path).is_dir():
            # Inspect names the local files it finds file://...; the report names them by path.
            found = [
                info.name.removeprefix("file://")
                for info in list_eval_logs(str(path), recursive=True)
            ]
            if not found:
                raise ReportError(f"{path} holds no Inspect logs (.eval or .json).")
            files += sorted(found)
        elif "://" in path or Path(path).suffix in LOG_SUFFIXES and Path(path).is_file():
            files.append(path)
        elif Path(path).is_file():
            raise ReportError(
                f"{path} is not an Inspect log: name .eval or .json logs, or folders of them."
            )
        else:
            raise ReportError(f"{path} is neither a log file nor a folder of logs.")
    return list(dict.fromkeys(files))


def read_runs(paths: Iterable[str]) -> list[Run]:
    """Every run in these logs (shards merged), in the order first named.

    The samples of a log read before are those kept then (`cache`). The others, when large, are
    read in parallel, one process per core: most of the time goes into Inspect's parsing of the
    sample summaries (which it shortens again as it reads them), and a process holds the
    summaries of one log at a time."""
    files = log_files(paths)
    headers = [_read_log(file) for file in files]  # headers first: a foreign log is refused now
    keys = [cache.key(file, READER) for file in files]
    tables = [cache.load(key) for key in keys]
    unread = [
        (file, key) for file, key, table in zip(files, keys, tables, strict=True) if table is None
    ]
    size = sum(key["size"] for _, key in unread if key)  # remote logs count 0
    read = iter(_map(_read_samples, unread, size))
    logs = [
        log_of(next(read) if table is None else Samples.from_table(table))
        for log_of, table in zip(headers, tables, strict=True)
    ]
    groups: dict[tuple, list[Log]] = {}
    for log in logs:
        groups.setdefault(_identity(log.run), []).append(log)
    return [_merge(group) for group in groups.values()]


def _map(function: Callable[..., T], arguments: list[tuple], size: int) -> list[T]:
    """function(*each) for each of the arguments: in one process per core when they are many
    bytes of logs, else in this one."""
    workers = min(len(arguments), usable_cores())
    if workers < 2 or size < PARALLEL_BYTES:
        return [function(*each) for each in arguments]
    # A fork starts at once with all this process has imported; a fresh interpreter ("spawn")
    # imports Inspect first, a second or two. So fork, but only where that is safe: on Linux,
    # from a process with no other thread (the command line, not a notebook's kernel).
    method = "fork" if sys.platform == "linux" and threading.active_count() == 1 else "spawn"
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(function, *zip(*arguments, strict=True)))


def run_name(log: EvalLog) -> str:
    """What the report calls a run (see the module's docstring)."""
    label = EvalMetadata.read(log.eval.metadata).label
    if label:
        return label
    model = log.eval.model
    if model and model != NO_MODEL:
        return model
    if log.eval.tags:
        return str(log.eval.tags[0])
    completions = completion_file_of(log)
    if completions:
        return Path(completions).name.removesuffix(".jsonl").removesuffix(".json")
    return "reference"


def _read_log(file: str) -> Callable[[Samples], Log]:
    """A log's run from its header, its shard and its status: read now (so that a foreign log is
    refused before any log's samples are read), made into the log once its samples are read."""
    header = read_eval_log(file, header_only=True)
    spec = header.eval
    if not is_ours(spec.task_registry_name):
        raise ReportError(
            f"{file} is a log of {spec.task_registry_name or spec.task}, not of one of "
            f"heval_inspect's tasks: give only logs of heval_inspect/... tasks."
        )
    metadata = EvalMetadata.read(spec.metadata)
    provenance = metadata.provenance
    problem_files = provenance.problem_files
    notes = (
        []
        if header.status == "success"
        else [f"{Path(file).name} ended with status {header.status!r}."]
    )
    started = datetime.fromisoformat(spec.created)
    shard = metadata.shard
    status = header.status
    run = partial(
        Run,
        name=run_name(header),
        model=spec.model,
        task=spec.task_registry_name.removeprefix(TASK_PREFIX),
        version=metadata.full_task_version or f"{spec.task_version}-?",
        comparability=(
            int(spec.task_version)
            if metadata.task_comparability_version is None
            else metadata.task_comparability_version
        ),
        problems_sha256=tuple(sorted(f.sha256 for f in problem_files)),
        completions_sha256=tuple(sorted(f.sha256 for f in provenance.completion_files)),
        timeout=provenance.timeout_seconds,
        memory_bytes=provenance.memory_bytes,
        # Read as the task read it: Inspect stores -T k=1,3 as ["1", "3"], -T k=[1,3] as [1, 3].
        ks=parse_ks(spec.task_args.get("k", 1)),
        per_subset=len(problem_files) > 1,
        files=[file],
        problem_files=problem_files,
        notes=notes,
        variant=metadata.variant,
    )

    def log_of(samples: Samples) -> Log:
        if shard is None:
            return Log(run(samples=samples), status, started)
        return ShardLog(run(samples=samples), status, started, shard)

    return log_of


def _read_samples(file: str, key: dict | None) -> Samples:
    """A log's samples, from Inspect's summaries of them, kept for the next report."""
    samples = _samples(file)
    cache.store(key, samples.table())
    return samples


def _samples(file: str) -> Samples:
    rows = []
    unscored = 0
    for summary in read_eval_log_sample_summaries(file):
        score = (summary.scores or {}).get(SCORER)
        if score is None or not isinstance(score.value, dict):
            unscored += 1
            continue
        value, metadata = score.value, score.metadata or {}
        target = summary.target if isinstance(summary.target, str) else "".join(summary.target)
        sample = SampleMetadata.read(summary.metadata, summary.id)
        rows.append(
            (
                str(summary.id),
                summary.epoch,
                sample.subset,
                sample.problem_id,
                float(value.get(PASSED, 0.0)),
                *(float(value.get(key, 0.0)) for key in MEAN_FIGURES),
                _cause(file, metadata),
                target,
            )
        )
    return Samples.from_rows(rows, unscored)


def _cause(file: str, score_metadata: dict) -> str:
    cause = cause_of(score_metadata)
    if cause is None:
        raise ReportError(
            f"{file} does not record how each program ended (the score's `cause`): it was "
            f"scored by an earlier development version of heval_inspect. Score it again with "
            f"`inspect score {file}` and give the new log."
        )
    return cause.value


def _identity(run: Run) -> tuple:
    """What the shards of one run share (everything but the shard)."""
    return (
        run.name,
        run.task,
        run.version,
        run.problems_sha256,
        run.completions_sha256,
        run.timeout,
        run.memory_bytes,
        tuple(run.ks),
        run.variant,
    )


def _merge(group: list[Log]) -> Run:
    """One run from its logs: an unsharded run's, or shards 1 ... n of n, or, of a run made both
    whole and in shards, the newer of the two that is complete."""
    sharded = [log for log in group if isinstance(log, ShardLog)]
    whole = [log for log in group if not isinstance(log, ShardLog)]
    if not sharded:
        return _unsharded(whole)
    if not whole:
        return _merged_shards(sharded)
    return _whole_or_sharded(whole, sharded)


def _whole_or_sharded(whole: list[Log], sharded: list[ShardLog]) -> Run:
    """The same run made whole and in shards (`heval-inspect parallel`): the newer of its
    successful whole log and its complete shards counts, and a note names what was set aside."""
    counted = max(_successful(whole), key=_age, default=None)
    try:
        shards: Run | None = _merged_shards(sharded)
        why_not_shards = ""
    except ReportError as error:
        shards, why_not_shards = None, str(error)
    if counted is None and shards is None:
        raise ReportError(
            f"{whole[0].run.label}: it was run whole and in shards, and neither is complete: no "
            f"whole log is successful ({_described(whole)}), and {why_not_shards} Give the "
            f"successful log of a whole run, or the n shards of one split."
        )
    shards_started = min(log.started for log in sharded)
    if shards is None or (counted is not None and counted.started >= shards_started):
        assert counted is not None
        run = _with_ignored(counted, whole, "the run")
        set_aside = f"its {len(sharded)} shard log(s) " + ", ".join(
            Path(log.file).name for log in sharded
        )
        because = "the newer" if shards is not None else "complete, where its shards are not"
        kept = f"its whole log, {_file_started(counted)} ({because})"
    else:
        run = shards
        set_aside = "its whole log(s) " + ", ".join(_file_started(log) for log in whole)
        kept = f"its {run.shards} shards, started {shards_started.isoformat(' ', 'seconds')}"
        kept += " (the newer)" if counted is not None else " (no whole log is successful)"
    note = (
        f"run both whole and in shards: counted {kept}; set aside {set_aside}. To report the "
        "other, give its logs alone."
    )
    return replace(run, notes=[*run.notes, note])


def _unsharded(logs: list[Log]) -> Run:
    """The run of an unsharded run's logs: the only one, or the successful one of a retry."""
    counted = _counted(logs)
    if counted:
        return _with_ignored(counted, logs, "the run")
    raise ReportError(
        f"{len(logs)} logs are the same run ({logs[0].run.label}), none of them successful: "
        f"{_described(logs)}. Give one of them, or retry the run (`inspect eval-retry LOG`) and "
        f"give its successful log too."
    )


def _merged_shards(sharded: list[ShardLog]) -> Run:
    """One run from the logs of its shards 1 ... n of n (of a retried shard, its successful log)."""
    first = sharded[0].run
    counts = {log.shard.count for log in sharded}
    if len(counts) > 1:
        given = ", ".join(
            f"{log.shard.index}/{log.shard.count} {log.described()}" for log in sharded
        )
        raise ReportError(
            f"{first.label}: its shard logs split the task in different numbers of shards "
            f"({given}): give the n shards of one split."
        )
    count = counts.pop()
    by_index: dict[int, list[ShardLog]] = {}
    for log in sorted(sharded, key=lambda log: log.shard.index):
        by_index.setdefault(log.shard.index, []).append(log)
    counted = {index: _counted(logs) for index, logs in by_index.items()}
    problems = _shard_problems(count, by_index, counted)
    if problems:
        raise ReportError(
            f"{first.label}: cannot merge its shards: {'; '.join(problems)}. Files: "
            f"{_described(sharded)}. Give each of the {count} shards of the run exactly once "
            f"(a shard's failed logs may stay beside its successful retry)."
        )
    # With no problem, every shard has a log that counts (a shard without one is a problem).
    chosen = {index: log for index, log in counted.items() if log is not None}
    all_tasks = {log.shard.all_tasks for log in sharded}
    merged_tasks = sum(log.shard.tasks for log in chosen.values())
    if len(all_tasks) == 1 and merged_tasks != all_tasks.copy().pop():
        raise ReportError(
            f"{first.label}: its {count} shards hold {merged_tasks} tasks, but the run has "
            f"{all_tasks.pop()}: the shards are not of one split of the task."
        )
    runs = [
        _with_ignored(log, by_index[index], f"shard {index} of {count}")
        for index, log in chosen.items()
    ]
    return replace(
        runs[0],
        files=[run.files[0] for run in runs],
        shards=f"1-{count} of {count}" if count > 1 else "1 of 1",
        notes=[note for run in runs for note in run.notes],
        samples=Samples.concatenate([run.samples for run in runs]),
    )


def _shard_problems(
    count: int, by_index: dict[int, list[ShardLog]], counted: dict[int, ShardLog | None]
) -> list[str]:
    """Why these shards (their logs by index, and the log that counts of each) cannot be merged:
    a gap, a shard with no successful log, a task in two shards."""
    problems = []
    missing = sorted(set(range(1, count + 1)) - set(by_index))
    if missing:
        problems.append(f"shard(s) {_numbers(missing)} of {count} missing (a gap)")
    unfinished = [index for index, log in counted.items() if log is None]
    if unfinished:
        problems.append(
            f"shard(s) {_numbers(unfinished)} given more than once with no successful log, in "
            + " and in ".join(_described(by_index[index]) for index in unfinished)
            + ": give one log of each, or retry the shard (`inspect eval-retry LOG`) and give "
            "its successful log too"
        )
    task_ids = [
        task for log in counted.values() if log for task in np.unique(log.run.samples.task_id)
    ]
    in_two = len(task_ids) - len(set(task_ids))
    if in_two:
        problems.append(f"{in_two} task(s) in more than one shard (an overlap)")
    return problems


def _counted(logs: list[AnyLog]) -> AnyLog | None:
    """The log that counts of those of one shard (or of one unsharded run): the only one, else
    the newest successful one (the others failed before it was retried, or were run before it);
    None if none is successful."""
    if len(logs) == 1:
        return logs[0]
    successful = _successful(logs)
    return max(successful, key=_age) if successful else None


def _age(log: Log) -> tuple[datetime, str]:
    """When the log's run started (and, for copies of one log, its file's name)."""
    return log.started, log.file


def _successful(logs: Sequence[AnyLog]) -> list[AnyLog]:
    return [log for log in logs if log.status == "success"]


def _with_ignored(counted: Log, logs: Sequence[Log], what: str) -> Run:
    """The run of the log that counts, its notes naming the other logs of `what` (its shard or
    the run), which are ignored."""
    ignored = [
        f"ignored {Path(log.file).name} (status {log.status!r}): {what} has a successful log, "
        f"{Path(counted.file).name}."
        for log in logs
        if log.status != "success"
    ]
    older = sorted((log for log in _successful(logs) if log is not counted), key=_age)
    if older:
        ignored.append(
            f"{len(older) + 1} successful logs of {what}: counted the newest, "
            f"{_file_started(counted)}; left out "
            + ", ".join(_file_started(log) for log in older)
            + ". To report another, give its file alone; to compare them, label the runs apart "
            "(--metadata label=NAME) when you run them."
        )
    return replace(counted.run, notes=counted.run.notes + ignored)


def _file_started(log: Log) -> str:
    return f"{Path(log.file).name} (started {log.started.isoformat(' ', 'seconds')})"


def _described(logs: Sequence[Log]) -> str:
    return ", ".join(log.described() for log in logs)


def _numbers(indices: list[int]) -> str:
    return ", ".join(map(str, indices))
