"""The report as data: each run's results, the paired comparisons, the failure kinds and the
pass@1 by gap shape, computed once from the logs (`build_report`) for every view to format."""

from dataclasses import dataclass, field

import numpy as np

from .failures import (
    GAP_BUCKETS,
    KINDS,
    gap_bucket,
    gap_lines,
    kinds,
    mid_line,
    problem_texts,
)
from .intervals import rate_interval
from .reading import read_runs
from .runs import ReportError, Run
from .stats import (
    Comparison,
    Figure,
    Results,
    compare,
    ordered_groups,
    pairs,
    results,
    spread,
    tasks_of,
)

RANDOM_SPAN = ("random_span", "random_span_light")


@dataclass(frozen=True)
class FailureRow:
    run: str
    subset: str
    counts: dict[str, int]  # by kind, every kind

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class GapRow:
    run: str
    subset: str
    by: str  # "gap lines" or "mid-line"
    bucket: str
    tasks: int
    pass_at_1: Figure


@dataclass
class Report:
    runs: list[Run]
    results: list[Results]
    comparisons: list[Comparison]
    failures: list[FailureRow]
    gaps: list[GapRow]
    notes: list[str] = field(default_factory=list)

    @property
    def groups(self) -> list[str]:
        return ordered_groups({g for r in self.results for g in r.groups})


def build_report(paths: list[str], baseline: str | None = None) -> Report:
    """Read the logs and compute every table of the report."""
    runs = read_runs(paths)
    labels = [run.label for run in runs]
    for run in runs:
        if labels.count(run.label) > 1:
            raise ReportError(
                f"Two different runs are both called {run.label} (files "
                f"{', '.join(f for r in runs if r.label == run.label for f in r.files)}): tell "
                f"them apart with --metadata label=NAME when you run them."
            )
    comparisons = [compare(a, b) for a, b in pairs(runs, baseline)]
    notes = [f"{run.label}: {note}" for run in runs for note in run.notes]
    if not comparisons and len(runs) > 1:
        notes.append(
            "No paired comparison: runs are compared only with runs of the same task (and with "
            "--baseline, only with the baseline's)."
        )
    failures, gaps = [], []
    for run in runs:
        failures += _failures(run)
        found, note = _gaps(run)
        gaps += found
        if note:
            notes.append(note)
    return Report(runs, [results(run) for run in runs], comparisons, failures, gaps, notes)


def _failures(run: Run) -> list[FailureRow]:
    samples = run.samples
    kind = kinds(samples.cause)
    subsets = ordered_groups(set(samples.subset))
    rows = []
    for subset in subsets + (["all"] if len(subsets) > 1 else []):
        chosen = kind if subset == "all" else kind[samples.subset == subset]
        counts = {name: int(np.count_nonzero(chosen == name)) for name in KINDS}
        if subset == "all" or len(subsets) == 1:
            counts["no verdict"] += samples.unscored
        rows.append(FailureRow(run.label, subset, counts))
    return rows


def _gaps(run: Run) -> tuple[list[GapRow], str | None]:
    """pass@1 by gap size, and for random span by where the gap starts and ends."""
    samples = run.samples
    if set(samples.subset) <= {"humaneval"}:
        return [], None
    tasks = tasks_of(run)
    ids, first, subsets = tasks.id, tasks.first, tasks.subset
    per_task = tasks.passed / tasks.epochs  # pass@1
    buckets = np.array([gap_bucket(gap_lines(samples.target[i])) for i in first], dtype=object)
    rows = []

    def add(subset: str, by: str, bucket: str, chosen: np.ndarray) -> None:
        s = spread(tasks, "pass@1", per_task, chosen.astype(float))
        figure = Figure(s.value, s.stderr, rate_interval(s), s.stderr)
        rows.append(GapRow(run.label, subset, by, bucket, int(chosen.sum()), figure))

    for subset in ordered_groups(set(subsets)):
        in_subset = subsets == subset
        for bucket in sorted(set(buckets[in_subset]), key=_bucket_order):
            add(subset, "gap lines", bucket, in_subset & (buckets == bucket))
    spans = [s for s in ordered_groups(set(subsets)) if s in RANDOM_SPAN]
    if not spans:
        return rows, None
    texts = problem_texts(run.problem_files)
    if texts is None:
        named = ", ".join(f.path or "?" for f in run.problem_files)
        return rows, f"{run.label}: pass@1 by where random-span gaps start and end needs " + (
            f"the problem files the log names ({named}), which are not on this machine (set "
            f"HEVAL_DATA_DIR to a folder with the official files)."
            if named
            else "the problem files, which the log does not name (it was written before the "
            "task's version 1)."
        )
    where = np.array(
        [_where(*mid_line(texts[t][0], samples.target[i], texts[t][1])) for t, i in
         zip(ids, first, strict=True)],
        dtype=object,
    )  # fmt: skip
    for subset in spans:
        in_subset = subsets == subset
        for label in WHERE:
            chosen = in_subset & (where == label)
            if chosen.any():
                add(subset, "mid-line", label, chosen)
    return rows, None


WHERE = (
    "starts and ends at line boundaries",
    "starts mid-line",
    "ends mid-line",
    "starts and ends mid-line",
)


def _where(starts: bool, ends: bool) -> str:
    return WHERE[int(starts) + 2 * int(ends)]


def _bucket_order(name: str) -> int:
    return [bucket for _, _, bucket in GAP_BUCKETS].index(name)
