"""A run of one of our tasks as the report reads it (Run): who, what, under which conditions, and
its scored samples as columns (Samples); the logs it was read from (Log, ShardLog).
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

import numpy as np

from ..errors import DataError
from ..schema import (
    ORIGINAL,
    ORIGINAL_VARIANT,
    DataFile,
    ShardRecord,
    VariantId,
)


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
    # -T variant: the tasks as they are, or a variant (variants/), and its generator's version
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
