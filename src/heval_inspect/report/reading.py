"""Logs into runs: one tidy table of scored samples per run, the shards of a run merged
(combine.py).

Logs are read with Inspect's own API: each log's header (`read_eval_log(header_only=True)`) and
its sample summaries (`read_eval_log_sample_summaries`), which hold every sample's id, epoch,
metadata, target and scores (score metadata strings shortened to 1,000 characters, which the
verdict and the exception's class fit in). Nothing else of a sample is read, and a log's table of
samples is kept (`cache`) so that the next report on the same log does not parse it again.

A run is named, in this order, by the eval metadata `label` (`inspect eval ... --metadata
label=NAME`), else its model, else (a run with `--model none`: the reference solver or a replayed
completion file) its first tag (`--tags NAME`), else the completion file's name, else `reference`.
"""

import hashlib
import multiprocessing
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from inspect_ai.log import (
    EvalLog,
    list_eval_logs,
    read_eval_log,
    read_eval_log_sample_summaries,
)

from ..host import usable_cores
from ..metrics import parse_ks
from ..schema import (
    MEAN_FIGURES,
    PASSED,
    SCORER,
    TASK_PREFIX,
    EvalMetadata,
    SampleMetadata,
    cause_of,
    completion_file_of,
    is_ours,
)
from . import cache
from .combine import merge
from .runs import Log, ReportError, Run, Samples, ShardLog

# Logs of more bytes than this in all (a few thousand samples, seconds of parsing) are read by
# several processes (28 MiB of real logs, 8,652 samples: 7.0 s in two processes, 9.6 s in one).
PARALLEL_BYTES = 8 << 20
NO_MODEL = "none/none"
T = TypeVar("T")
# The code that makes a log's table of samples (this module, and the table's columns in runs.py):
# a kept table made by other code is not used.
READER = hashlib.sha256(
    b"".join((Path(__file__).parent / name).read_bytes() for name in ("runs.py", "reading.py"))
).hexdigest()[:16]


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
    return [merge(group) for group in groups.values()]


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
