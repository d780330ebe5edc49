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
"""

import hashlib
import multiprocessing
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
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
from ..export import SCORER, completion_file_of
from ..parallel import usable_cores
from . import cache

PACKAGE_TASKS = "heval_inspect/"
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
    problem_files: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # One row per scored (task, epoch), in task order (see `Samples`).
    samples: "Samples | None" = None

    @property
    def label(self) -> str:
        """The name the report shows: the run's name and its task version."""
        return f"{self.name} ({self.task} {self.version})"


COLUMNS = {
    "task_id": str, "epoch": int, "subset": str, "problem": str,
    "passed": float, "exact_match": float, "exact_match_stripped": float,  # 0.0 or 1.0
    "verdict": object, "reason": object,
    "error": object,  # the exception's class; None in logs from before it was recorded
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
    verdict: np.ndarray
    reason: np.ndarray
    error: np.ndarray
    target: np.ndarray
    unscored: int = 0

    def __len__(self) -> int:
        return len(self.task_id)

    @classmethod
    def from_rows(cls, rows: list[tuple], unscored: int) -> "Samples":
        """From rows of values in COLUMNS' order."""
        values = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
        columns = {
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
        columns = {
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
        elif Path(path).is_file() or "://" in path:
            files.append(path)
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
    pieces = [_read_log(file) for file in files]  # headers first: a foreign log is refused now
    keys = [cache.key(file, READER) for file in files]
    tables = [cache.load(key) for key in keys]
    unread = [
        (file, key) for file, key, table in zip(files, keys, tables, strict=True) if table is None
    ]
    size = sum(key["size"] for _, key in unread if key)  # remote logs count 0
    read = iter(_map(_read_samples, unread, size))
    for (run, _), table in zip(pieces, tables, strict=True):
        run.samples = next(read) if table is None else Samples.from_table(table)
    groups: dict[tuple, list[tuple[Run, dict | None]]] = {}
    for run, shard in pieces:
        groups.setdefault(_identity(run), []).append((run, shard))
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
    metadata = log.eval.metadata or {}
    if metadata.get("label"):
        return str(metadata["label"])
    model = log.eval.model
    if model and model != NO_MODEL:
        return model
    if log.eval.tags:
        return str(log.eval.tags[0])
    completions = completion_file_of(log)
    if completions:
        return Path(completions).name.removesuffix(".jsonl").removesuffix(".json")
    return "reference"


def _read_log(file: str) -> tuple[Run, dict | None]:
    """A log's run from its header (its samples not yet read), and its shard (None if not one)."""
    header = read_eval_log(file, header_only=True)
    spec = header.eval
    if not (spec.task_registry_name or "").startswith(PACKAGE_TASKS):
        raise ReportError(
            f"{file} is a log of {spec.task_registry_name or spec.task}, not of one of "
            f"heval_inspect's tasks: give only logs of heval_inspect/... tasks."
        )
    metadata = spec.metadata or {}
    provenance = metadata.get("provenance", {})
    data_files = provenance.get("data_files", [])
    limits = provenance.get("limits", {})
    problem_files = [f for f in data_files if f.get("role") == "problems"]
    ks = str(spec.task_args.get("k", 1)).strip("[]").split(",")
    run = Run(
        name=run_name(header),
        model=spec.model,
        task=spec.task_registry_name.removeprefix(PACKAGE_TASKS),
        version=str(metadata.get("full_task_version", f"{spec.task_version}-?")),
        comparability=int(metadata.get("task_comparability_version", spec.task_version)),
        problems_sha256=tuple(sorted(f["sha256"] for f in problem_files)),
        completions_sha256=tuple(
            sorted(f["sha256"] for f in data_files if f.get("role") == "completions")
        ),
        timeout=limits.get("timeout_seconds"),
        memory_bytes=limits.get("memory_bytes"),
        ks=sorted({int(k) for k in ks if k.strip()}),
        per_subset=len(problem_files) > 1,
        files=[file],
        problem_files=problem_files,
    )
    if header.status != "success":
        run.notes.append(f"{Path(file).name} ended with status {header.status!r}.")
    return run, metadata.get("shard")


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
        rows.append(
            (
                str(summary.id),
                summary.epoch,
                str(summary.metadata.get("subset", "all")),
                str(summary.metadata.get("problem_id", summary.id)),
                float(value.get("passed", 0.0)),
                float(value.get("exact_match", 0.0)),
                float(value.get("exact_match_stripped", 0.0)),
                str(metadata.get("verdict", "")),
                str(metadata.get("reason", "")),
                metadata.get("error"),
                target,
            )
        )
    return Samples.from_rows(rows, unscored)


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
    )


def _merge(group: list[tuple[Run, dict | None]]) -> Run:
    """One run from its logs: a single unsharded log, or shards 1 ... n of n."""
    first = group[0][0]
    sharded = [(run, shard) for run, shard in group if shard]
    if not sharded:
        if len(group) > 1:
            raise ReportError(
                f"{len(group)} logs are the same run ({first.label}): "
                f"{', '.join(run.files[0] for run, _ in group)}. Give one of them, or tell the "
                f"runs apart with --metadata label=NAME when you run them."
            )
        return first
    if len(sharded) != len(group):
        raise ReportError(
            f"{first.label}: some of its logs are shards and some are not "
            f"({', '.join(run.files[0] for run, _ in group)}): give either the whole run or its "
            f"shards."
        )
    counts = {shard["count"] for _, shard in sharded}
    if len(counts) > 1:
        given = ", ".join(f"{shard['index']}/{shard['count']}" for _, shard in sharded)
        raise ReportError(
            f"{first.label}: its shard logs split the task in different numbers of shards "
            f"({given}): give the n shards of one split."
        )
    count = counts.pop()
    indices = sorted(shard["index"] for _, shard in sharded)
    missing = sorted(set(range(1, count + 1)) - set(indices))
    repeated = sorted({i for i in indices if indices.count(i) > 1})
    task_ids = np.concatenate([np.unique(run.samples.task_id) for run, _ in sharded])
    in_two = len(task_ids) - len(np.unique(task_ids))
    if missing or repeated or in_two:
        problems = []
        if missing:
            problems.append(f"shard(s) {', '.join(map(str, missing))} of {count} missing (a gap)")
        if repeated:
            problems.append(
                f"shard(s) {', '.join(map(str, repeated))} given more than once (an overlap)"
            )
        if in_two and not repeated:
            problems.append(f"{in_two} task(s) in more than one shard (an overlap)")
        raise ReportError(
            f"{first.label}: cannot merge its shards: {'; '.join(problems)}. Files: "
            f"{', '.join(run.files[0] for run, _ in sharded)}. Give each of the {count} shards "
            f"of the run exactly once."
        )
    all_tasks = {shard.get("all_tasks") for _, shard in sharded}
    merged_tasks = sum(shard["tasks"] for _, shard in sharded)
    if len(all_tasks) == 1 and merged_tasks != all_tasks.copy().pop():
        raise ReportError(
            f"{first.label}: its {count} shards hold {merged_tasks} tasks, but the run has "
            f"{all_tasks.pop()}: the shards are not of one split of the task."
        )
    ordered = sorted(sharded, key=lambda pair: pair[1]["index"])
    runs = [run for run, _ in ordered]
    return replace(
        first,
        files=[run.files[0] for run in runs],
        shards=f"1-{count} of {count}" if count > 1 else "1 of 1",
        notes=[note for run in runs for note in run.notes],
        samples=Samples.concatenate([run.samples for run in runs]),
    )
