"""Shards: one task split into n parts that separate processes or machines run (`-T shard=i/n`).

Shards are numbered from 1: `-T shard=1/4` ... `-T shard=4/4`. A shard holds whole HumanEval
problems (every task cut from one problem is in the same shard), since the standard errors are
clustered by problem. The split is balanced by number of tasks and deterministic: problems are
taken largest first (ties in the order the task lists them) and each goes to the shard that has
the fewest tasks so far (ties to the lowest number). The same task arguments always give the same
shards, on any machine, so n processes started with 1/n ... n/n score every task exactly once.

Each shard's log records which shard it is (the eval metadata's `shard`), for merging.

`-T limit=...` and `-T sample_id=...` pick the run's samples before the split, as Inspect's
`--limit` and `--sample-id` pick them from the unsharded task: Inspect's own options apply to each
shard's samples alone (`--limit 10` over 2 shards runs 20), so `heval-inspect parallel` passes
them to the task as these arguments instead.
"""

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample

from .errors import TaskArgumentError
from .schema import SHARD_KEY, ShardRecord

T = TypeVar("T")

SHARD_FORMAT = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
# Inspect's --limit: N (the first N samples) or A-B (the A-th to the B-th, from 1).
LIMIT_FORMAT = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


@dataclass(frozen=True)
class Shard:
    index: int  # 1 ... count
    count: int


def parse_shard(value: Any) -> Shard | None:
    """`-T shard=i/n` as a Shard (None: no sharding). Refuses anything else with what to give."""
    if value is None:
        return None
    match = SHARD_FORMAT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise TaskArgumentError(
            f"shard={value!r}: give the shard as i/n, where n is the number of shards and i the "
            f"one to run, numbered from 1 (e.g. -T shard=1/4 ... -T shard=4/4)."
        )
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise TaskArgumentError(
            f"shard={value}: shards are numbered from 1 to n (1-based), and n is 1 or more "
            f"(e.g. -T shard=1/4 ... -T shard=4/4). From a 0-based index, such as Kubernetes' "
            f"JOB_COMPLETION_INDEX, pass index + 1."
        )
    return Shard(index, count)


def parse_limit(value: Any) -> slice | None:
    """`-T limit=N` or `-T limit=A-B` as the slice of the samples it keeps (None: all)."""
    if value is None:
        return None
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    match = LIMIT_FORMAT.fullmatch(text) if isinstance(text, str) else None
    first, last = 0, 0  # refused below
    if match and match.group(2) is None:
        first, last = 1, int(match.group(1))
    elif match:
        first, last = int(match.group(1)), int(match.group(2))
    if not 1 <= first <= last:
        raise TaskArgumentError(
            f"limit={value!r}: give the number of samples to run, 1 or more (-T limit=10), or "
            f"the first and last of them, numbered from 1 (-T limit=11-20), as for --limit."
        )
    return slice(first - 1, last)


def parse_sample_ids(value: Any) -> list[str] | None:
    """`-T sample_id=ID,ID` as the list of its ids (None: all samples)."""
    if value is None:
        return None
    ids = value if isinstance(value, list) else str(value).split(",")
    ids = [str(each).strip() for each in ids if str(each).strip()]
    if not ids:
        raise TaskArgumentError(
            f"sample_id={value!r}: give one or more sample ids, comma-separated "
            f"(e.g. -T sample_id=HumanEval/0,HumanEval/7), as for --sample-id."
        )
    return ids


def select(samples: Sequence[T], limit: slice | None, ids: list[str] | None,
           id_of: Callable[[T], str]) -> list[T]:  # fmt: skip
    """The samples a run keeps of `samples`: those of `ids`, in the task's order, then the
    `limit` of them. Refuses ids the task does not have, naming the closest it has."""
    kept = list(samples)
    if ids is not None:
        known = {id_of(sample) for sample in kept}
        unknown = [each for each in ids if each not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise TaskArgumentError(
                f"sample_id: this task has no sample {', '.join(unknown[:3])}{hint}; its ids "
                f"look like {', '.join(id_of(sample) for sample in kept[:2])}."
            )
        wanted = set(ids)
        kept = [sample for sample in kept if id_of(sample) in wanted]
    if limit is not None:
        if limit.start >= len(kept):
            raise TaskArgumentError(
                f"limit={limit.start + 1}-{limit.stop}: this run has only {len(kept)} "
                f"samples; start the range at {len(kept)} or less."
            )
        kept = kept[limit]
    return kept


def split(items: Sequence[T], count: int, group: Callable[[T], str]) -> list[list[T]]:
    """`items` in `count` shards, whole groups per shard, balanced by number of items.

    Each shard keeps the items' own order. Largest groups first, each to the shard with the fewest
    items so far (lowest number on ties): no shard exceeds another by more than its largest group.
    """
    groups: dict[str, list[int]] = {}
    for position, item in enumerate(items):
        groups.setdefault(group(item), []).append(position)
    # Python's sort is stable: groups of one size stay in the order they first appear.
    by_size = sorted(groups.values(), key=len, reverse=True)
    sizes = [0] * count
    shard_of = [0] * len(items)
    for positions in by_size:
        target = min(range(count), key=lambda shard: (sizes[shard], shard))
        sizes[target] += len(positions)
        for position in positions:
            shard_of[position] = target
    shards: list[list[T]] = [[] for _ in range(count)]
    for position, item in enumerate(items):
        shards[shard_of[position]].append(item)
    return shards


def apply_shard(task: Task, shard: Shard | None, group: Callable[[Sample], str]) -> Task:
    """The task with only its shard's samples, and the shard recorded in the log's metadata."""
    if shard is None:
        return task
    samples = list(task.dataset)
    mine = split(samples, shard.count, group)[shard.index - 1]
    problems = list(dict.fromkeys(group(sample) for sample in mine))
    if not mine:
        total = len({group(sample) for sample in samples})
        raise TaskArgumentError(
            f"shard={shard.index}/{shard.count}: this run ({len(samples)} samples) has only "
            f"{total} HumanEval problem(s), and a shard holds whole problems, so shard "
            f"{shard.index} would be empty: use at most {total} shard(s), or more samples."
        )
    task.dataset = MemoryDataset(mine, name=task.dataset.name, location=task.dataset.location)
    task.metadata = (task.metadata or {}) | {
        SHARD_KEY: ShardRecord(
            index=shard.index,
            count=shard.count,
            tasks=len(mine),
            problems=problems,
            all_tasks=len(samples),
            all_problems=len({group(sample) for sample in samples}),
        ).metadata()
    }
    return task
