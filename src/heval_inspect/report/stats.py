"""The report's numbers: each run's figures with 95% intervals, and paired differences.

A run's figures are the metric's own (`metrics.summarise`, on the tasks read from its logs), so a
report of one log repeats the log's figures, and a report of a run's shards gives the unsharded
run's. Each rate's 95% interval is Wilson's on the effective number of tasks, clustered by
HumanEval problem, its end towards 0 or 1 as far as Jeffreys' (`intervals`): inside [0, 1], and
none from fewer than two problems.

Two runs are compared on the tasks both ran (Miller 2024, "Adding Error Bars to Evals", arXiv
2411.00640, section 4): per task the difference d_i of the two runs' per-task values (pass@k, an
exact-match share), the difference D = sum_i w_i d_i with the group's weights, its paired standard
error clustered by problem (the metric's formula applied to d_i), the interval D +- t SE, the
two-sided p-value of D = 0, and the minimum detectable effect (t_0.975 + t_0.80) x SE: the
smallest true difference this set of tasks finds with 80% power at 5% significance, given the
spread observed; t is Student's, with the effective degrees of freedom of the clustered variance.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..metrics import (
    TaskColumns,
    blends,
    reportable_ks,
    subset_order,
    summarise,
    task_values,
)
from ..schema import MEAN_FIGURES, ORIGINAL
from . import intervals
from .intervals import Spread
from .runs import ReportError, Run


def tasks_of(run: Run, only: np.ndarray | None = None) -> TaskColumns:
    """The run's task columns, as the metric builds them; `only`: these task ids alone."""
    samples = run.samples
    tasks = TaskColumns.of_samples(
        samples.task_id,
        samples.passed,
        {key: getattr(samples, key) for key in MEAN_FIGURES},
        samples.subset,
        samples.problem,
    )
    return tasks if only is None else tasks.only(only)


def group_name(prefix: str, subsets: np.ndarray) -> str:
    """A group's name in the report: the blend or subset, or a single set's own name."""
    return prefix.rstrip("/") or str(subsets[0])


@dataclass(frozen=True)
class Figure:
    """A rate (the metric's value and clustered standard error) and its 95% interval, inside
    [0, 1] and around the value (computed apart from it, they may differ by float error)."""

    value: float
    stderr: float  # a run's figure: the metric's own, as its log records it; else clustered_stderr
    interval: tuple[float, float] | None  # None: from fewer than two problems
    # Clustered by problem and bias-reduced (CR2, `intervals.spread`): what the interval is
    # built on. For multi-line infilling it can differ from the metric's own (up to about 2x).
    clustered_stderr: float = math.nan

    def __post_init__(self) -> None:
        value = intervals.snapped(self.value)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "interval", intervals.bounded(value, self.interval))

    @property
    def low(self) -> float:
        return math.nan if self.interval is None else self.interval[0]

    @property
    def high(self) -> float:
        return math.nan if self.interval is None else self.interval[1]


def spread(tasks: TaskColumns, name: str, values: np.ndarray, weights: np.ndarray) -> Spread:
    """The spread of a figure's per-task values over the tasks of weight > 0."""
    chosen = weights > 0
    return intervals.spread(
        values[chosen], weights[chosen], tasks.problem[chosen], trials(tasks, name)[chosen]
    )


def trials(tasks: TaskColumns, name: str) -> np.ndarray:
    """The independent trials behind each task's value of a figure: its epochs (a share of
    them), or for pass@k its epochs / k (pass@k of n epochs weighs about n / k draws of k)."""
    k = int(name.removeprefix("pass@")) if name.startswith("pass@") else 1
    return tasks.epochs / k


@dataclass
class Results:
    """One run's figures: by group (subset or blend), by figure name."""

    run: Run
    groups: dict[str, dict[str, Figure]]
    tasks: dict[str, int]
    epochs: tuple[int, int]  # fewest and most epochs of a task
    ks: list[int]
    pass_at: dict[int, Figure]  # pass@k of the whole run for every k up to the fewest epochs


def results(run: Run) -> Results:
    tasks = tasks_of(run)
    if not len(tasks.id):
        raise ReportError(f"{run.label} ({', '.join(run.files)}) has no scored sample.")
    ks = reportable_ks(tasks, run.ks)
    figures = summarise(tasks, ks, run.per_subset)
    values = task_values(tasks, ks)
    rows = blends(tasks.subset, tasks.problem, run.per_subset)
    groups: dict[str, dict[str, Figure]] = {}
    counts: dict[str, int] = {}
    for prefix, weights in rows.items():
        group = group_name(prefix, tasks.subset)
        spreads = {
            name: spread(tasks, name, per_task, weights) for name, per_task in values.items()
        }
        groups[group] = {
            name: Figure(
                figures[prefix + name],
                figures[f"{prefix}{name}_stderr"],
                intervals.rate_interval(s),
                s.stderr,
            )
            for name, s in spreads.items()
        }
        counts[group] = int(np.count_nonzero(weights))
    # pass@k against k, for the plot: every k the run's epochs allow, over all the run's tasks.
    n_min = int(tasks.epochs.min())
    every_k = list(range(1, n_min + 1))
    figures = summarise(tasks, every_k, per_subset=False)
    values = task_values(tasks, every_k)
    everything = np.ones(len(tasks.id))
    by_k = {k: spread(tasks, f"pass@{k}", values[f"pass@{k}"], everything) for k in every_k}
    pass_at = {
        k: Figure(
            figures[f"pass@{k}"],
            figures[f"pass@{k}_stderr"],
            intervals.rate_interval(s),
            s.stderr,
        )
        for k, s in by_k.items()
    }
    return Results(run, groups, counts, (n_min, int(tasks.epochs.max())), ks, pass_at)


@dataclass(frozen=True)
class Difference:
    """`other` minus `baseline` on one figure and group, over the tasks both ran."""

    group: str
    figure: str
    baseline: Spread  # of the baseline's per-task values
    other: Spread
    spread: Spread  # of the per-task differences
    tasks: int
    other_better: int  # tasks where `other`'s per-task value is higher
    baseline_better: int
    same: int

    @property
    def baseline_value(self) -> float:
        return self.baseline.value

    @property
    def other_value(self) -> float:
        return self.other.value

    @property
    def difference(self) -> float:
        return self.spread.value

    @property
    def stderr(self) -> float:
        return self.spread.stderr

    @property
    def problems(self) -> int:
        return self.spread.problems

    @property
    def degrees_of_freedom(self) -> float:
        return self.spread.degrees_of_freedom

    @cached_property  # read by low and high, in every view
    def interval(self) -> tuple[float, float] | None:
        return intervals.difference_interval(self.spread, self.baseline, self.other)

    @property
    def low(self) -> float:
        return math.nan if self.interval is None else self.interval[0]

    @property
    def high(self) -> float:
        return math.nan if self.interval is None else self.interval[1]

    @property
    def t(self) -> float | None:
        return self.difference / self.stderr if self.stderr > 0 else None

    @property
    def p_value(self) -> float | None:
        return intervals.p_value(self.spread, self.baseline, self.other)

    @property
    def minimum_detectable(self) -> float:
        return intervals.minimum_detectable(self.spread)


@dataclass
class Comparison:
    baseline: Run
    other: Run
    differences: list[Difference]
    common_tasks: int
    common_problems: int
    only_baseline: tuple[int, int]  # tasks (and their problems) only the baseline ran: left out
    only_other: tuple[int, int]
    # By pass@k: the tasks on which `other` does worse (lost) and better (gained), by task id.
    flips: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)

    @property
    def variant_gap(self) -> bool:
        """One run's tasks as a variant against the same run of the original tasks: how much of
        its score the original's text alone was worth (memory rather than skill)."""
        return (
            self.baseline.variant.name == ORIGINAL != self.other.variant.name
            and self.baseline.name == self.other.name
        )

    @property
    def short_title(self) -> str:
        """The comparison named by what tells its runs apart (a plot's label)."""
        if self.variant_gap:
            return f"{self.other.name}: {self.other.variant.name} - original"
        if self.other.name != self.baseline.name:
            return f"{self.other.name} - {self.baseline.name}"
        return f"{self.other.label} - {self.baseline.label}"

    @property
    def title(self) -> str:
        if self.variant_gap:
            run = f"{self.other.name} ({self.other.task} {self.other.version})"
            return f"{run}: {self.other.variant.name} minus original (variant gap)"
        return f"{self.other.label} minus {self.baseline.label}"


def why_not_comparable(a: Run, b: Run) -> list[str]:
    """What keeps two runs' scores from being compared (empty: nothing)."""
    reasons = []
    if a.comparability != b.comparability:
        reasons.append(
            f"task comparability versions differ ({a.version} and {b.version}; compare runs of "
            f"one version, see CHANGELOG.md)"
        )
    if a.problems_sha256 != b.problems_sha256:
        reasons.append(
            "their problem files' SHA-256 checksums differ ("
            + " vs ".join(", ".join(h[:12] for h in run.problems_sha256) for run in (a, b))
            + "): they were scored against different data"
        )
    if a.timeout != b.timeout:
        reasons.append(f"their time limits differ ({a.timeout:g} s and {b.timeout:g} s)")
    if a.variant.name == b.variant.name and a.variant.version != b.variant.version:
        reasons.append(
            f"their {a.variant.name} variants were built by different generator versions "
            f"({a.variant.version} and {b.variant.version}): they are different problems"
        )
    return reasons


def compare(baseline: Run, other: Run) -> Comparison:
    """`other` against `baseline`, task by task, on the tasks both ran."""
    reasons = why_not_comparable(baseline, other)
    if reasons:
        raise ReportError(
            f"Cannot compare {other.label} with {baseline.label}: {'; '.join(reasons)}. Files: "
            f"{', '.join(baseline.files)} and {', '.join(other.files)}."
        )
    ids_a, ids_b = np.unique(baseline.samples.task_id), np.unique(other.samples.task_id)
    common = np.intersect1d(ids_a, ids_b)
    if not len(common):
        raise ReportError(
            f"{other.label} and {baseline.label} have no task in common: nothing to compare."
        )
    a, b = tasks_of(baseline, common), tasks_of(other, common)
    ks = sorted(set(reportable_ks(a, baseline.ks)) & set(reportable_ks(b, other.ks))) or []
    values_a, values_b = task_values(a, ks), task_values(b, ks)
    rows = blends(a.subset, a.problem, baseline.per_subset)
    differences = []
    flips = {}
    for name in values_a:
        d = values_b[name] - values_a[name]
        if name.startswith("pass@"):
            flips[name] = (a.id[d < 0].tolist(), a.id[d > 0].tolist())
        for prefix, weights in rows.items():
            chosen = weights > 0
            differences.append(
                Difference(
                    group=group_name(prefix, a.subset),
                    figure=name,
                    baseline=spread(a, name, values_a[name], weights),
                    other=spread(b, name, values_b[name], weights),
                    spread=intervals.spread(d[chosen], weights[chosen], a.problem[chosen]),
                    tasks=int(chosen.sum()),
                    other_better=int((d[chosen] > 0).sum()),
                    baseline_better=int((d[chosen] < 0).sum()),
                    same=int((d[chosen] == 0).sum()),
                )
            )
    return Comparison(
        baseline, other, differences, len(common), len(np.unique(a.problem)),
        _left_out(baseline, common, a.problem), _left_out(other, common, a.problem), flips,
    )  # fmt: skip


def _left_out(run: Run, common: np.ndarray, compared: np.ndarray) -> tuple[int, int]:
    """How many of `run`'s tasks are not compared, and of its problems none of whose tasks is."""
    samples = run.samples
    outside = ~np.isin(samples.task_id, common)
    return (
        len(np.unique(samples.task_id[outside])),
        len(np.setdiff1d(np.unique(samples.problem), compared)),
    )


def pairs(runs: list[Run], baseline: str | None) -> list[tuple[Run, Run]]:
    """The comparisons to make: each run against the baseline's run of its task, or every pair
    of runs of one task, each on one variant of the task; and each run of a variant against
    the same run (its name) of the original tasks (the variant gap)."""
    by_task: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        by_task.setdefault((run.task, run.variant.name), []).append(run)
    chosen: list[tuple[Run, Run]] = []
    gaps = [
        (original, run)
        for run in runs
        for original in by_task.get((run.task, ORIGINAL), [])
        if run.variant.name != ORIGINAL and original.name == run.name
    ]
    if baseline is not None:
        matching = [run for run in runs if baseline in (run.name, run.model, run.label)]
        if not matching:
            names = ", ".join(sorted({run.name for run in runs}))
            raise ReportError(f"--baseline {baseline}: no run has that name; the runs: {names}.")
        for base in matching:
            same = by_task[(base.task, base.variant.name)]
            chosen += [(base, run) for run in same if run is not base]
        return chosen + gaps
    for task_runs in by_task.values():
        for i, first in enumerate(task_runs):
            chosen += [(first, second) for second in task_runs[i + 1 :]]
    return chosen + gaps


def ordered_groups(names: Iterable[str]) -> list[str]:
    """Blends first (the headline first), then the subsets in their usual order."""
    blend_order = ["sample_weighted", "mean_of_subsets", "problem_macro"]
    return sorted(
        names,
        key=lambda n: (0, blend_order.index(n), "") if n in blend_order else (1, *subset_order(n)),
    )
