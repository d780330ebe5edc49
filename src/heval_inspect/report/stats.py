"""The report's numbers: each run's figures with 95% intervals, and paired differences.

A run's figures are the metric's own (`metrics.summarise`, on the tasks read from its logs), so a
report of one log repeats the log's figures, and a report of a run's shards gives the unsharded
run's. Each interval is the figure +- z_0.975 x its standard error, clustered by HumanEval problem.

Two runs are compared on the tasks both ran (Miller 2024, "Adding Error Bars to Evals", arXiv
2411.00640, section 4): per task the difference d_i of the two runs' per-task values (pass@k, an
exact-match share), the difference D = sum_i w_i d_i with the group's weights, its paired standard
error clustered by problem (the metric's formula applied to d_i), the interval D +- z_0.975 SE,
the two-sided p-value erfc(|D / SE| / sqrt 2) of a normal test of D = 0, and the minimum
detectable effect (z_0.975 + z_0.80) x SE: the smallest true difference this set of tasks finds
with 80% power at 5% significance, given the spread observed.
"""

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..metrics import (
    blends,
    clustered_stderr,
    problem_numbers,
    reportable_ks,
    subset_order,
    summarise,
    task_values,
    weighted_mean,
)
from .runs import ReportError, Run

Z_95 = NormalDist().inv_cdf(0.975)  # 1.959963984540054
Z_POWER_80 = NormalDist().inv_cdf(0.80)  # 0.8416212335729143
FIGURES = ("exact_match", "exact_match_stripped")


def tasks_of(run: Run, only: np.ndarray | None = None) -> dict:
    """The run's task columns, as the metric builds them (`metrics._tasks`), in task-id order.

    `only`: keep these task ids alone."""
    samples = run.samples
    ids, first, row_task = np.unique(samples.task_id, return_index=True, return_inverse=True)
    tasks = {
        "id": ids,
        "first": first,  # the row of the task's first sample
        "epochs": np.bincount(row_task).astype(int),
        "passed": np.rint(np.bincount(row_task, weights=samples.passed)).astype(int),
        "sums": {key: np.bincount(row_task, weights=getattr(samples, key)) for key in FIGURES},
        "subset": samples.subset[first],
        "problem": samples.problem[first],
    }
    if only is not None:
        keep = np.isin(ids, only)
        tasks = {
            key: ({k: v[keep] for k, v in value.items()} if key == "sums" else value[keep])
            for key, value in tasks.items()
        }
    return tasks


def group_name(prefix: str, subsets: np.ndarray) -> str:
    """A group's name in the report: the blend or subset, or a single set's own name."""
    return prefix.rstrip("/") or str(subsets[0])


@dataclass(frozen=True)
class Figure:
    value: float
    stderr: float

    @property
    def low(self) -> float:
        return self.value - Z_95 * self.stderr

    @property
    def high(self) -> float:
        return self.value + Z_95 * self.stderr


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
    if not len(tasks["id"]):
        raise ReportError(f"{run.label} ({', '.join(run.files)}) has no scored sample.")
    ks = reportable_ks(tasks, run.ks)
    figures = summarise(tasks, ks, run.per_subset)
    rows, _ = blends(tasks["subset"], tasks["problem"], run.per_subset)
    names = [f"pass@{k}" for k in ks] + list(FIGURES)
    groups: dict[str, dict[str, Figure]] = {}
    counts: dict[str, int] = {}
    for prefix, weights in rows.items():
        group = group_name(prefix, tasks["subset"])
        groups[group] = {
            name: Figure(figures[prefix + name], figures[f"{prefix}{name}_stderr"])
            for name in names
        }
        counts[group] = int(np.count_nonzero(weights))
    # pass@k against k, for the plot: every k the run's epochs allow, over the headline group.
    n_min = int(tasks["epochs"].min())
    every_k = summarise(tasks, list(range(1, n_min + 1)), per_subset=False)
    pass_at = {
        k: Figure(every_k[f"pass@{k}"], every_k[f"pass@{k}_stderr"]) for k in range(1, n_min + 1)
    }
    return Results(run, groups, counts, (n_min, int(tasks["epochs"].max())), ks, pass_at)


@dataclass(frozen=True)
class Difference:
    """`other` minus `baseline` on one figure and group, over the tasks both ran."""

    group: str
    figure: str
    baseline_value: float
    other_value: float
    difference: float
    stderr: float
    tasks: int
    problems: int
    other_better: int  # tasks where `other`'s per-task value is higher
    baseline_better: int
    same: int

    @property
    def low(self) -> float:
        return self.difference - Z_95 * self.stderr

    @property
    def high(self) -> float:
        return self.difference + Z_95 * self.stderr

    @property
    def z(self) -> float | None:
        return self.difference / self.stderr if self.stderr > 0 else None

    @property
    def p_value(self) -> float | None:
        """Two-sided, normal: erfc(|z| / sqrt 2); None when there is no spread to test by."""
        z = self.z
        return None if z is None else math.erfc(abs(z) / math.sqrt(2))

    @property
    def minimum_detectable(self) -> float:
        """(z_0.975 + z_0.80) x SE: the smallest difference found with 80% power at 5%."""
        return (Z_95 + Z_POWER_80) * self.stderr


@dataclass
class Comparison:
    baseline: Run
    other: Run
    differences: list[Difference]
    common_tasks: int
    only_baseline: int  # tasks that only the baseline ran
    only_other: int


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
    rows, _ = blends(a["subset"], a["problem"], baseline.per_subset)
    problem_index = problem_numbers(a["problem"])
    differences = []
    for name in values_a:
        d = values_b[name] - values_a[name]
        for prefix, weights in rows.items():
            chosen = weights > 0
            share = weights[chosen] / math.fsum(weights[chosen])
            differences.append(
                Difference(
                    group=group_name(prefix, a["subset"]),
                    figure=name,
                    baseline_value=weighted_mean(values_a[name][chosen], share),
                    other_value=weighted_mean(values_b[name][chosen], share),
                    difference=weighted_mean(d[chosen], share),
                    stderr=clustered_stderr(d[chosen], share, problem_index[chosen]),
                    tasks=int(chosen.sum()),
                    problems=len(np.unique(problem_index[chosen])),
                    other_better=int((d[chosen] > 0).sum()),
                    baseline_better=int((d[chosen] < 0).sum()),
                    same=int((d[chosen] == 0).sum()),
                )
            )
    return Comparison(
        baseline, other, differences, len(common), len(ids_a) - len(common),
        len(ids_b) - len(common),
    )  # fmt: skip


def pairs(runs: list[Run], baseline: str | None) -> list[tuple[Run, Run]]:
    """The comparisons to make: each run against the baseline's run of its task, or every pair
    of runs of one task."""
    by_task: dict[str, list[Run]] = {}
    for run in runs:
        by_task.setdefault(run.task, []).append(run)
    chosen: list[tuple[Run, Run]] = []
    if baseline is not None:
        matching = [run for run in runs if baseline in (run.name, run.model, run.label)]
        if not matching:
            names = ", ".join(sorted({run.name for run in runs}))
            raise ReportError(f"--baseline {baseline}: no run has that name; the runs: {names}.")
        for base in matching:
            chosen += [(base, run) for run in by_task[base.task] if run is not base]
        return chosen
    for task_runs in by_task.values():
        for i, first in enumerate(task_runs):
            chosen += [(first, second) for second in task_runs[i + 1 :]]
    return chosen


def ordered_groups(names) -> list[str]:
    """Blends first (the headline first), then the subsets in their usual order."""
    blend_order = ["sample_weighted", "mean_of_subsets", "problem_macro"]
    return sorted(
        names,
        key=lambda n: (0, blend_order.index(n), "") if n in blend_order else (1, *subset_order(n)),
    )
