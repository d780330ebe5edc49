"""One run from its logs: its shards merged, its retries and reruns chosen between.

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

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np

from .runs import AnyLog, Log, ReportError, Run, Samples, ShardLog


def merge(group: list[Log]) -> Run:
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
