"""How often the report's 95% intervals contain the true rate or difference: old against new.

The shapes are the real ones: each problem has the number of tasks it has in each infilling
subset's official file (read with `heval_inspect.data`: multi-line 1 to 435 per problem, single
line 1 to 29, random span 10, random span light and HumanEval 1), and a run holds G problems, the
first G in file order or G drawn at random (afresh in each replication), G = 5 to 164. A group is
a subset, or a blend of all four (`sample_weighted`: every task alike; `mean_of_subsets`: each
subset alike; `problem_macro`: each problem alike), with the report's weights.

Rates. A problem's rate is drawn from Beta(mu phi, (1 - mu) phi), phi = `--problem-phi` (0.3:
most problems near 0 or 1, as on HumanEval), and each of its tasks' rate from Beta(r psi,
(1 - r) psi) around it, psi = `--task-psi` (20: tasks of a problem differ, but less than
problems); each task runs E epochs (1 or 5), each passing with the task's rate, and an exact
match is a pass that also matches, with probability 0.5. A problem's tasks in different subsets
share its rate. Figures: pass@1 and exact match, and with 5 epochs pass@3 too, each task's value
computed as the report does (`metrics.pass_at_k`, a share of epochs).

The estimand ("the true rate") is the population rate the data are drawn from: the expected
per-task value, mu for pass@1, mu / 2 for exact match and E[1 - (1 - r)^3] for pass@3 (exact,
from the two beta laws' moments). Problems' rates are drawn independently of their numbers of
tasks, so this is also the expectation of the figure under every weighting the report uses, and
it is the same for the old and the new interval.

Paired differences. Two runs on the same tasks, one epoch: a problem's difficulty b ~ N(0, 2.5^2)
(bimodal rates), a task's own deviation t ~ N(0, 1), each run's own deviation on a problem
e ~ N(0, 0.5^2); run A passes a task with probability expit(mu + b + t + e_A), run B with
expit(mu + delta + b + t + e_B), delta 0 (the null: the type I error of the p-value) or 0.5 on
the logit scale. mu gives run A a population rate of 0.05 to 0.95; the true difference comes from
Gauss-Hermite quadrature (0 exactly under the null).

"Old" is the report's interval before the change, kept here verbatim (`old_*`: Wilson on an
effective n with the CR1 standard error, a Satterthwaite-like df, D +- t SE, no p-value with SE 0);
"new" is the package's own (`heval_inspect.report.intervals`), so the numbers describe the shipped
code. Every new interval is checked to lie in its figure's range with positive width, and every
new p-value to exist and agree with the interval (p < 0.05 exactly when 0 is outside it); the run
stops with an error if one does not.

Speed. A replication's figures are a few NumPy reductions over its tasks, so each cell computes
all its replications at once (`Tasks`, `new_spreads`, `old_spreads` and the `*_intervals`
functions below: the formulas of `intervals.spread`, `rate_interval`, `difference_interval` and
`p_value`, and of the old ones above, on arrays with one entry per replication).
tests/test_interval_coverage.py checks them against the package's own functions and the verbatim
old ones, replication by replication, to 1e-12, on random inputs; the one path that is a root
search (the p-value when SE is 0 and the difference is not) calls `intervals.p_value` itself.
Run one replication at a time, Python's per-call overhead (and SciPy's, for one t quantile at a
time) made a 1,000-replication table take hours on 2 cores.

    python benchmarks/interval_coverage.py                     # 2000 reps a cell: ~20 min, 2 cores
    python benchmarks/interval_coverage.py --reps 200 --problems 5,10 --out coverage.md
    python benchmarks/interval_coverage.py --problems 10,40 --rates 0.05,0.95 --epochs 5 \
        --kinds rate                                           # a part: summary and short cells

With R replications a cell's Monte-Carlo SE is sqrt(0.95 x 0.05 / R): 0.49 points at 2000, 0.69
at 1000.
"""

import argparse
import hashlib
import math
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import stats
from scipy.special import expit

from heval_inspect.data import SUBSETS, load_official
from heval_inspect.metrics import pass_at_k
from heval_inspect.report import intervals
from heval_inspect.tasks import problem_id

TARGET = 93.0  # the floor for coverage, up to Monte-Carlo error
LEVEL = 5.0  # the p-value's nominal type I error, %
RATES = (0.05, 0.2, 0.5, 0.8, 0.95)
PROBLEMS = (5, 10, 20, 40, 164)
BLENDS = ("sample_weighted", "mean_of_subsets", "problem_macro")
GROUPS = (*SUBSETS, *BLENDS)
EXACT_SHARE = 0.5  # of passing epochs that also match exactly
DIFFICULTY_SD, TASK_SD, RUN_SD, DELTA = 2.5, 1.0, 0.5, 0.5
# Gauss-Hermite nodes, made once: making them (an eigenvalue problem of order 120) for each of
# the 200 steps of `logit_for`'s bisection was most of a small run's time.
NODES, NODE_WEIGHTS = hermegauss(120)
# Replications computed together: enough that NumPy's per-call cost vanishes, few enough that a
# cell of 164 problems (8,652 tasks a replication) holds a few hundred MB.
TASKS_PER_CHUNK = 1_500_000


# ---- the report's intervals before this change, verbatim but for names ----------------------


def old_spread(values, weights, clusters, trials=None):
    share = np.asarray(weights, dtype=float) / math.fsum(weights)
    trials = np.ones(len(share)) if trials is None else np.maximum(np.asarray(trials, float), 1)
    value = math.fsum(share * values)
    _, cluster_of = np.unique(np.asarray(clusters), return_inverse=True)
    contributions = np.bincount(cluster_of, weights=share * (values - value))
    problems = len(contributions)
    squares = math.fsum(contributions**2)
    tasks_weighted = 1 / math.fsum(share**2)
    problems_weighted = 1 / math.fsum(np.bincount(cluster_of, weights=share) ** 2)
    stderr = math.sqrt(problems / (problems - 1) * squares)
    fourths = math.fsum(contributions**4)
    carried = squares**2 / fourths if fourths > 0 else problems - 1
    carried = min(max(carried, 1.0), problems - 1.0)
    beyond_one = 1 - problems_weighted / tasks_weighted
    freedom = 1 / (beyond_one / carried + (1 - beyond_one) / (problems - 1))
    return intervals.Spread(
        value, stderr, problems, freedom, tasks_weighted, problems_weighted,
        1 / math.fsum(share**2 / trials),
    )  # fmt: skip


def old_rate_interval(s):
    p = min(max(s.value, 0.0), 1.0)
    if 0 < p < 1 and s.stderr > 0:
        n = min(max(p * (1 - p) / s.stderr**2, s.problems_weighted), s.trials_weighted)
    else:
        n = s.problems_weighted
    q = stats.t.ppf(0.975, s.degrees_of_freedom)
    centre = (p + q * q / (2 * n)) / (1 + q * q / n)
    half = q / (1 + q * q / n) * math.sqrt(p * (1 - p) / n + q * q / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def old_difference_interval(s, baseline, other):
    if s.stderr > 0:
        q = stats.t.ppf(0.975, s.degrees_of_freedom)
        return s.value - q * s.stderr, s.value + q * s.stderr
    (low_a, high_a), (low_b, high_b) = old_rate_interval(baseline), old_rate_interval(other)
    a, b = baseline.value, other.value
    return s.value - math.hypot(b - low_b, high_a - a), s.value + math.hypot(high_b - b, a - low_a)


def old_p_value(s):
    if not s.stderr > 0:
        return None
    return float(2 * stats.t.sf(abs(s.value / s.stderr), s.degrees_of_freedom))


# ---- the same, for many replications at once ------------------------------------------------


class Tasks:
    """One group's tasks in R replications of G problems each, the replications one after the
    other, and what its weights alone decide (shared by every figure of the group)."""

    def __init__(self, problem: np.ndarray, weights: np.ndarray, reps: int, problems: int):
        # problem: each task's problem, numbered across replications (replication x G + g).
        self.problem, self.weights = problem, np.asarray(weights, dtype=float)
        self.reps, self.problems = reps, problems
        self.rep = problem // problems
        if np.any(np.diff(self.rep) < 0):
            raise ValueError("tasks must come replication after replication")
        counts = np.bincount(problem, minlength=reps * problems)
        if len(counts) != reps * problems or not np.all(counts > 0):
            raise ValueError("every replication must have a task of each of its G problems")
        self.starts = np.searchsorted(self.rep, np.arange(reps))
        # Each replication's total weight as the package sums it (math.fsum): an ulp of it
        # moves a dominant problem's 1 - 2 W_g + sum_h W_h^2 by much more (`bias_reductions`).
        total = np.array([math.fsum(self.weights[self.part(i)]) for i in range(reps)])
        self.share = self.weights / total[self.rep]
        self.problem_share = self.per_problem(self.share)
        self.tasks_weighted = 1 / self.per_rep(self.share**2)
        self.problems_weighted = 1 / np.sum(self.problem_share**2, axis=1)
        self.scale, self.design = bias_reductions(self.problem_share)

    def per_rep(self, x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, self.starts)

    def per_problem(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(self.problem, x, minlength=self.reps * self.problems).reshape(
            self.reps, self.problems
        )

    def alike(self, x: np.ndarray) -> np.ndarray:
        """Whether each replication's tasks all have one value (np.ptp(values) == 0)."""
        return np.maximum.reduceat(x, self.starts) == np.minimum.reduceat(x, self.starts)

    def part(self, i: int) -> slice:
        return slice(self.starts[i], self.starts[i + 1] if i + 1 < self.reps else None)


def bias_reductions(shares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`intervals.bias_reduction` for each row of problem shares W (R x G): CR2's factors and
    Bell and McCaffrey's degrees of freedom, with the same operations in the same order. A
    problem that carries nearly all the weight makes 1 - 2 W_g + sum_h W_h^2 a small difference
    of large numbers, so the covariance is not expanded into sums over g (whose terms cancel:
    1e-5 off at W_g = 0.999) but made whole, G x G for each replication, and its quadratic form
    summed in positive terms, as the package does."""
    squares = np.array([math.fsum(row) for row in shares**2])
    covariance = squares[:, None, None] - shares[:, :, None] - shares[:, None, :]
    diagonal = np.arange(shares.shape[1])
    covariance[:, diagonal, diagonal] += 1
    scale = 1 / covariance[:, diagonal, diagonal]
    loads = scale * shares**2
    form = np.einsum("rg,rgh,rh->r", loads, covariance**2, loads)
    return scale, np.minimum(squares**2 / form, shares.shape[1] - 1.0)


@dataclass
class Spreads:
    """`intervals.Spread` for each replication (each field an array but `problems`)."""

    value: np.ndarray
    stderr: np.ndarray
    problems: int
    degrees_of_freedom: np.ndarray
    tasks_weighted: np.ndarray
    problems_weighted: np.ndarray
    trials_weighted: np.ndarray

    def at(self, i: int) -> intervals.Spread:
        return intervals.Spread(
            float(self.value[i]), float(self.stderr[i]), self.problems,
            float(self.degrees_of_freedom[i]), float(self.tasks_weighted[i]),
            float(self.problems_weighted[i]), float(self.trials_weighted[i]),
        )  # fmt: skip


def snapped(x: np.ndarray) -> np.ndarray:
    """`intervals.snapped`, elementwise."""
    out = x.copy()
    for end in (0.0, 1.0, -1.0):
        out[np.abs(x - end) < intervals.ROUNDING] = end
    return out


def bounded(
    value: np.ndarray, low: np.ndarray, high: np.ndarray, lowest: float = 0.0, highest: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """`intervals.bounded`, elementwise."""
    value = np.minimum(np.maximum(value, lowest), highest)
    return np.maximum(lowest, np.minimum(low, value)), np.minimum(highest, np.maximum(high, value))


def trials_weighted(tasks: Tasks, trials: float | np.ndarray) -> np.ndarray:
    return 1 / tasks.per_rep(tasks.share**2 / np.maximum(trials, 1))


def new_spreads(tasks: Tasks, x: np.ndarray, trials: float | np.ndarray = 1.0) -> Spreads:
    """`intervals.spread` of each replication's values `x`."""
    alike = tasks.alike(x)
    value = np.where(alike, x[tasks.starts], tasks.per_rep(tasks.weights * x) / (
        tasks.per_rep(tasks.weights)
    ))  # fmt: skip
    value = snapped(value)
    residuals = np.where(alike[tasks.rep], 0.0, x - value[tasks.rep])
    scaled = tasks.scale * tasks.per_problem(tasks.share * residuals) ** 2
    stderr = np.sqrt(np.sum(scaled, axis=1))
    fourths = np.sum(scaled**2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        carried = np.where(fourths > 0, np.sum(scaled, axis=1) ** 2 / fourths, tasks.design)
    none = stderr < intervals.ROUNDING  # every task alike, but for float error
    stderr[none], carried[none] = 0.0, tasks.design[none]
    carried = np.minimum(np.maximum(carried, 1.0), tasks.design)
    beyond_one = np.maximum(1 - tasks.problems_weighted / tasks.tasks_weighted, 0.0)
    freedom = 1 / (beyond_one / carried + (1 - beyond_one) / tasks.design)
    return Spreads(
        value, stderr, tasks.problems, freedom, tasks.tasks_weighted, tasks.problems_weighted,
        trials_weighted(tasks, trials),
    )  # fmt: skip


def t_quantiles(degrees_of_freedom: np.ndarray, confidence: float = intervals.CONFIDENCE):
    return stats.t.ppf(1 - (1 - confidence) / 2, degrees_of_freedom)


def new_rate_intervals(s: Spreads) -> tuple[np.ndarray, np.ndarray]:
    """`intervals.rate_interval` of each replication."""
    p = snapped(np.minimum(np.maximum(s.value, 0.0), 1.0))
    inside = (p > 0) & (p < 1) & (s.stderr > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread_n = np.minimum(
            np.maximum(p * (1 - p) / s.stderr**2, s.problems_weighted),
            np.minimum(s.trials_weighted, s.problems_weighted**2),
        )
    n = np.where(inside, spread_n, s.problems_weighted)
    q2 = t_quantiles(s.degrees_of_freedom) ** 2
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = np.sqrt(q2) / (1 + q2 / n) * np.sqrt(p * (1 - p) / n + q2 / (4 * n * n))
    low, high = centre - half, centre + half
    # The end towards the nearer of 0 and 1 reaches as far as Jeffreys' on n (z / q)^2.
    tail = (1 - intervals.CONFIDENCE) / 2
    m = n * float(stats.norm.isf(tail)) ** 2 / q2
    a, b = p * m + 0.5, (1 - p) * m + 0.5
    side = np.where(np.abs(p - 0.5) < intervals.ROUNDING, 0.0, p - 0.5)
    lower, upper = (p > 0) & (side < 0), (p < 1) & (side > 0)
    low[lower] = np.minimum(low[lower], stats.beta.ppf(tail, a[lower], b[lower]))
    high[upper] = np.maximum(high[upper], stats.beta.isf(tail, a[upper], b[upper]))
    return bounded(p, low, high)


def new_difference_intervals(d: Spreads, a: Spreads, b: Spreads) -> tuple[np.ndarray, np.ndarray]:
    """`intervals.difference_interval` of each replication (d: b minus a)."""
    half = t_quantiles(d.degrees_of_freedom) * d.stderr
    (low_a, high_a), (low_b, high_b) = new_rate_intervals(a), new_rate_intervals(b)
    spread = d.stderr > 0
    low = np.where(spread, d.value - half, d.value - np.hypot(b.value - low_b, high_a - a.value))
    high = np.where(spread, d.value + half, d.value + np.hypot(high_b - b.value, a.value - low_a))
    return bounded(d.value, low, high, -1.0)


def new_p_values(d: Spreads, a: Spreads, b: Spreads) -> np.ndarray:
    """`intervals.p_value` of each replication: the t test's with SE > 0, 1 for a difference of
    0 with SE 0, and otherwise (a root search) the package's own function."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stats.t.sf(np.abs(d.value / d.stderr), d.degrees_of_freedom)
    p[~(d.stderr > 0)] = 1.0
    for i in np.flatnonzero(~(d.stderr > 0) & (d.value != 0)):
        p[i] = intervals.p_value(d.at(i), a.at(i), b.at(i))
    return p


def old_spreads(tasks: Tasks, x: np.ndarray, trials: float | np.ndarray = 1.0) -> Spreads:
    """`old_spread` of each replication's values `x`."""
    value = tasks.per_rep(tasks.share * x)
    # The old figure was a sum of rounded shares: a run that passed everything could be
    # 0.9999999999999998 with a standard error of 1e-17, or exactly 1 with none, which its
    # interval told apart (the misses of high rates the new one fixed). So where every task has
    # one value, other than 0, the figure is the old code's own sum.
    alike = tasks.alike(x)
    for i in np.flatnonzero(alike & (x[tasks.starts] != 0)):
        part = tasks.part(i)
        weights = tasks.weights[part]
        value[i] = math.fsum(weights / math.fsum(weights) * x[part])
    value[alike & (x[tasks.starts] == 0)] = 0.0
    contributions = tasks.per_problem(tasks.share * (x - value[tasks.rep]))
    g = tasks.problems
    squares = np.sum(contributions**2, axis=1)
    stderr = np.sqrt(g / (g - 1) * squares)
    fourths = np.sum(contributions**4, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        carried = np.where(fourths > 0, squares**2 / fourths, g - 1.0)
    carried = np.minimum(np.maximum(carried, 1.0), g - 1.0)
    beyond_one = 1 - tasks.problems_weighted / tasks.tasks_weighted
    freedom = 1 / (beyond_one / carried + (1 - beyond_one) / (g - 1))
    return Spreads(
        value, stderr, g, freedom, tasks.tasks_weighted, tasks.problems_weighted,
        trials_weighted(tasks, trials),
    )  # fmt: skip


def old_rate_intervals(s: Spreads) -> tuple[np.ndarray, np.ndarray]:
    """`old_rate_interval` of each replication."""
    p = np.minimum(np.maximum(s.value, 0.0), 1.0)
    inside = (p > 0) & (p < 1) & (s.stderr > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread_n = np.minimum(
            np.maximum(p * (1 - p) / s.stderr**2, s.problems_weighted), s.trials_weighted
        )
    n = np.where(inside, spread_n, s.problems_weighted)
    q = stats.t.ppf(0.975, s.degrees_of_freedom)
    centre = (p + q * q / (2 * n)) / (1 + q * q / n)
    half = q / (1 + q * q / n) * np.sqrt(p * (1 - p) / n + q * q / (4 * n * n))
    return np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)


def old_difference_intervals(d: Spreads, a: Spreads, b: Spreads) -> tuple[np.ndarray, np.ndarray]:
    """`old_difference_interval` of each replication."""
    half = stats.t.ppf(0.975, d.degrees_of_freedom) * d.stderr
    (low_a, high_a), (low_b, high_b) = old_rate_intervals(a), old_rate_intervals(b)
    spread = d.stderr > 0
    low = np.where(spread, d.value - half, d.value - np.hypot(b.value - low_b, high_a - a.value))
    high = np.where(spread, d.value + half, d.value + np.hypot(high_b - b.value, a.value - low_a))
    return low, high


def old_p_values(d: Spreads) -> np.ndarray:
    """`old_p_value` of each replication, NaN for its None (SE 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stats.t.sf(np.abs(d.value / d.stderr), d.degrees_of_freedom)
    p[~(d.stderr > 0)] = math.nan
    return p


# ---- the shapes -----------------------------------------------------------------------------


def real_sizes() -> dict[str, np.ndarray]:
    """Each subset's number of tasks per HumanEval problem, in file order."""
    sizes = {}
    for name, file in SUBSETS.items():
        problems = [problem_id(record["task_id"]) for record in load_official(file)]
        counts = Counter(problems)
        sizes[name] = np.array([counts[p] for p in dict.fromkeys(problems)])
    return sizes


@dataclass(frozen=True)
class Cell:
    kind: str  # "rate" or "difference"
    problems: int
    order: str  # "first" (file order) or "random"
    rate: float  # mu; for differences run A's population rate
    epochs: int  # rates: 1 or 5; differences: 1
    delta: float  # differences: 0 (null) or DELTA
    reps: int
    seed: tuple[int, ...]
    sizes: dict = field(hash=False, compare=False, repr=False)
    phi: float = 0.3
    psi: float = 20.0


@dataclass
class Tally:
    """One group and figure of a cell: counts over the replications."""

    old: int = 0
    new: int = 0
    old_outside: int = 0  # old intervals leaving their figure's range
    old_no_p: int = 0  # differences: old p-value n/a while the interval excludes 0
    old_reject: int = 0  # differences under the null: p < 0.05
    new_reject: int = 0
    old_width: float = 0.0
    new_width: float = 0.0
    old_low: int = 0  # misses with the interval above the truth (else below it)
    new_low: int = 0


def choose(cell: Cell, reps: int, rng: np.random.Generator) -> np.ndarray:
    """The problems of each replication (reps x G), in file order."""
    if cell.order == "first":
        return np.tile(np.arange(cell.problems), (reps, 1))
    # A uniform draw of G of the 164 problems for each replication.
    return np.sort(np.argsort(rng.random((reps, 164)), axis=1)[:, : cell.problems], axis=1)


def layout(cell: Cell, chosen: np.ndarray) -> tuple[np.ndarray, dict[str, Tasks]]:
    """Every task of the replications (each subset's tasks, replication after replication, one
    subset after the other), as its problem numbered across replications; and each group's
    tasks, as indices into those, with the report's weights."""
    reps, g = chosen.shape
    numbered = np.arange(reps * g)
    parts = [np.repeat(numbered, cell.sizes[s][chosen].ravel()) for s in SUBSETS]
    everything = np.concatenate(parts)
    subset = np.concatenate([np.full(len(p), i) for i, p in enumerate(parts)])
    groups: dict[str, tuple[np.ndarray, Tasks]] = {}
    start = 0
    for s, part in zip(SUBSETS, parts, strict=True):
        groups[s] = (np.arange(start, start + len(part)), Tasks(part, np.ones(len(part)), reps, g))
        start += len(part)
    # A blend's tasks, replication after replication (its subsets in order within each).
    order = np.argsort(everything // g, kind="stable")
    rep_subset = everything // g * len(SUBSETS) + subset
    weights = {
        "sample_weighted": np.ones(len(everything)),
        "mean_of_subsets": 1 / np.bincount(rep_subset)[rep_subset],
        "problem_macro": 1 / np.bincount(everything)[everything],
    }
    for blend, w in weights.items():
        groups[blend] = (order, Tasks(everything[order], w[order], reps, g))
    return everything, groups


def chunks(cell: Cell) -> Iterator[int]:
    """The cell's replications in chunks of about TASKS_PER_CHUNK tasks of each group."""
    mean_tasks = sum(float(np.mean(s)) for s in cell.sizes.values()) * cell.problems
    size = max(1, min(cell.reps, int(TASKS_PER_CHUNK / mean_tasks)))
    done = 0
    while done < cell.reps:
        yield min(size, cell.reps - done)
        done += size


def pass_at_3_truth(mu: float, phi: float, psi: float) -> float:
    """E[1 - (1 - r)^3]: r | p ~ Beta(p psi, (1 - p) psi), p ~ Beta(mu phi, (1 - mu) phi)."""
    # E[(1 - r)^3 | p] = prod_j ((1 - p) psi + j) / (psi + j), a polynomial in q = 1 - p, whose
    # expectation takes the beta moments E[q^m] = prod_{i<m} (b + i) / (phi + i), b = (1-mu) phi.
    poly = np.polynomial.Polynomial([1.0])
    for j in range(3):
        poly = poly * np.polynomial.Polynomial([j / (psi + j), psi / (psi + j)])
    b = (1 - mu) * phi
    moments = [math.prod((b + i) / (phi + i) for i in range(m)) for m in range(len(poly.coef))]
    return 1 - float(np.dot(poly.coef, moments))


def figures_of(epochs: int) -> list[str]:
    return ["pass@1", "exact_match"] + (["pass@3"] if epochs >= 3 else [])


def check_range(cell: Cell, group: str, figure: str, low, high, lowest: float) -> None:
    wrong = ~((lowest <= low) & (low < high) & (high <= 1))
    if np.any(wrong):
        i = int(np.flatnonzero(wrong)[0])
        raise RuntimeError(f"{cell} {group} {figure}: new interval {low[i], high[i]}")


def count(tally: Tally, true: float, old, new) -> None:
    """Adds a chunk's old and new intervals (each a pair of arrays) to the tally."""
    (old_low, old_high), (new_low, new_high) = old, new
    tally.old += int(np.sum((old_low <= true) & (true <= old_high)))
    tally.new += int(np.sum((new_low <= true) & (true <= new_high)))
    tally.old_low += int(np.sum(old_low > true))
    tally.new_low += int(np.sum(new_low > true))
    tally.old_width += float(np.sum(old_high - old_low))
    tally.new_width += float(np.sum(new_high - new_low))


def rate_cell(cell: Cell) -> dict[tuple[str, str], Tally]:
    rng = np.random.default_rng(cell.seed)
    truth = {"pass@1": cell.rate, "exact_match": EXACT_SHARE * cell.rate}
    truth["pass@3"] = pass_at_3_truth(cell.rate, cell.phi, cell.psi)
    tallies = {(g, f): Tally() for g in GROUPS for f in figures_of(cell.epochs)}
    table3 = np.array([pass_at_k(cell.epochs, c, 3) for c in range(cell.epochs + 1)]) if (
        cell.epochs >= 3
    ) else None  # fmt: skip
    for reps in chunks(cell):
        everything, groups = layout(cell, choose(cell, reps, rng))
        own = rng.beta(cell.rate * cell.phi, (1 - cell.rate) * cell.phi, reps * cell.problems)
        own = np.clip(own, 1e-12, 1 - 1e-12)  # Beta draws of 0 or 1 give NaN below
        task = rng.beta(own[everything] * cell.psi, (1 - own[everything]) * cell.psi)
        passed = rng.binomial(cell.epochs, task)
        matched = rng.binomial(passed, EXACT_SHARE)
        values = {"pass@1": passed / cell.epochs, "exact_match": matched / cell.epochs}
        if table3 is not None:
            values["pass@3"] = table3[passed]
        for group, (index, tasks) in groups.items():
            for figure, per_task in values.items():
                trials = cell.epochs / (3 if figure == "pass@3" else 1)
                x, tally = per_task[index], tallies[group, figure]
                old = old_rate_intervals(old_spreads(tasks, x, trials))
                new = new_rate_intervals(new_spreads(tasks, x, trials))
                check_range(cell, group, figure, *new, 0.0)
                count(tally, truth[figure], old, new)
                tally.old_outside += int(np.sum(~((old[0] >= 0) & (old[0] < old[1]) & (
                    old[1] <= 1))))  # fmt: skip
    return tallies


def population_rate(mu: float) -> float:
    scale = math.sqrt(DIFFICULTY_SD**2 + TASK_SD**2 + RUN_SD**2)
    return float(NODE_WEIGHTS @ expit(mu + scale * NODES)) / math.sqrt(2 * math.pi)


def logit_for(rate: float) -> float:
    low, high = -30.0, 30.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if population_rate(middle) < rate else (low, middle)
    return (low + high) / 2


def difference_cell(cell: Cell) -> dict[tuple[str, str], Tally]:
    rng = np.random.default_rng(cell.seed)
    mu = logit_for(cell.rate)
    truth = population_rate(mu + cell.delta) - population_rate(mu) if cell.delta else 0.0
    tallies = {(g, "pass@1"): Tally() for g in GROUPS}
    for reps in chunks(cell):
        everything, groups = layout(cell, choose(cell, reps, rng))
        n, problems = len(everything), reps * cell.problems
        shared = rng.normal(0, DIFFICULTY_SD, problems)[everything]
        shared += rng.normal(0, TASK_SD, n)
        run_a = rng.normal(0, RUN_SD, problems)[everything]
        run_b = rng.normal(0, RUN_SD, problems)[everything]
        a = (rng.random(n) < expit(mu + shared + run_a)).astype(float)
        b = (rng.random(n) < expit(mu + cell.delta + shared + run_b)).astype(float)
        for group, (index, tasks) in groups.items():
            tally = tallies[group, "pass@1"]
            xa, xb = a[index], b[index]
            o_a, o_b, o_d = (old_spreads(tasks, x) for x in (xa, xb, xb - xa))
            old = old_difference_intervals(o_d, o_a, o_b)
            n_a, n_b, n_d = (new_spreads(tasks, x) for x in (xa, xb, xb - xa))
            new = new_difference_intervals(n_d, n_a, n_b)
            p = new_p_values(n_d, n_a, n_b)
            check_range(cell, group, "difference", *new, -1.0)
            disagree = ((p < 0.05) != ~((new[0] <= 0) & (new[1] >= 0))) & (
                np.abs(p - 0.05) > 1e-9
            )  # fmt: skip
            if np.any(disagree):
                i = int(np.flatnonzero(disagree)[0])
                raise RuntimeError(
                    f"{cell} {group}: p {p[i]} disagrees with {new[0][i], new[1][i]}"
                )
            count(tally, truth, old, new)
            tally.old_outside += int(np.sum(~((old[0] >= -1) & (old[0] < old[1]) & (
                old[1] <= 1))))  # fmt: skip
            old_p = old_p_values(o_d)
            tally.old_no_p += int(np.sum(np.isnan(old_p) & ~((old[0] <= 0) & (old[1] >= 0))))
            tally.old_reject += int(np.sum(old_p < 0.05))
            tally.new_reject += int(np.sum(p < 0.05))
    return tallies


def run_cell(cell: Cell):
    started = time.process_time()
    tallies = rate_cell(cell) if cell.kind == "rate" else difference_cell(cell)
    return cell, tallies, time.process_time() - started


def cells(args, sizes) -> list[Cell]:
    """Every cell of the table, or those the options keep. A cell's seed depends on its place in
    the full table, not on what else runs, so a cell run alone draws the same runs as in it."""
    out = []
    for problems in args.problems:
        # Each G's place in the default list (the seeds of the recorded tables).
        g = PROBLEMS.index(problems) if problems in PROBLEMS else problems
        for o, order in enumerate(("first", "random") if problems < 164 else ("first",)):
            for r, rate in enumerate(RATES):
                if rate not in args.rates:
                    continue
                for epochs in (1, 5):
                    seed = (args.seed, 0, g, o, r, epochs)
                    if "rate" in args.kinds and epochs in args.epochs:
                        out.append(
                            Cell("rate", problems, order, rate, epochs, 0.0, args.reps, seed,
                                 sizes, args.problem_phi, args.task_psi)
                        )  # fmt: skip
                for d, delta in enumerate((0.0, DELTA)):
                    seed = (args.seed, 1, g, o, r, d)
                    if "difference" in args.kinds:
                        out.append(
                            Cell("difference", problems, order, rate, 1, delta, args.reps, seed,
                                 sizes)
                        )  # fmt: skip
    return out


# ---- the tables -----------------------------------------------------------------------------


def orders(g: int) -> tuple[str, ...]:
    return ("first", "random") if g < 164 else ("first",)


def coverage_table(results, kind, group, figure, epochs, delta, problems) -> str:
    """Rows: G and order; columns: the rates; cells: old / new coverage, %."""
    head = "| G | " + " | ".join(f"{r:.2f}" for r in RATES) + " |"
    lines = [head, "|--:|" + "--:|" * len(RATES)]
    for g in problems:
        for order in orders(g):
            row = []
            for rate in RATES:
                cell, tallies = results[kind, g, order, rate, epochs, delta]
                t = tallies[group, figure]
                row.append(f"{100 * t.old / cell.reps:.1f} / {100 * t.new / cell.reps:.1f}")
            lines.append(f"| {g} {order} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def every_outcome(results):
    for cell, tallies in results.values():
        for (group, figure), t in tallies.items():
            yield cell, group, figure, t


def name(cell: Cell, group: str, figure: str) -> str:
    what = (
        f"{figure}, E={cell.epochs}" if cell.kind == "rate" else f"difference, delta {cell.delta}"
    )
    return f"{group}, G={cell.problems} {cell.order}, rate {cell.rate}, {what}"


def monte_carlo(reps: int) -> tuple[float, float, float, float]:
    """A cell's Monte-Carlo SE at 95% coverage and at 5% rejections, %, and the floor and ceiling
    beyond which a cell is off beyond that error (two SEs past TARGET and LEVEL)."""
    cover = 100 * math.sqrt(0.95 * 0.05 / reps)
    floor = TARGET - 2 * 100 * math.sqrt(TARGET / 100 * (1 - TARGET / 100) / reps)
    ceiling = LEVEL + 2 * 100 * math.sqrt(LEVEL / 100 * (1 - LEVEL / 100) / reps)
    return cover, cover, floor, ceiling


def summaries(results) -> str:
    lines = []
    reps = next(iter(results.values()))[0].reps
    _, _, floor, ceiling = monte_carlo(reps)
    for kind in ("rate", "difference"):
        outcomes = [o for o in every_outcome(results) if o[0].kind == kind]
        if not outcomes:  # a run of the other kind only (--kinds)
            continue
        cover = [
            (100 * t.old / c.reps, 100 * t.new / c.reps, c, g, f, t) for c, g, f, t in outcomes
        ]
        worst_old = min(cover, key=lambda x: x[0])
        worst_new = min(cover, key=lambda x: x[1])
        below_old = sum(x[0] < TARGET for x in cover)
        below_new = sum(x[1] < TARGET for x in cover)
        width_ratio = sum(x[5].new_width for x in cover) / sum(x[5].old_width for x in cover)
        lines += [
            f"- {kind}s: {len(cover)} cells (group x figure x G x order x rate), {reps} reps each",
            (
                f"  - below {TARGET:g}%: old {below_old}, new {below_new}; below {floor:.1f}% "
                f"({TARGET:g}% less two Monte-Carlo SEs): old "
                f"{sum(x[0] < floor for x in cover)}, new {sum(x[1] < floor for x in cover)}"
            ),
            (
                f"  - worst old: {worst_old[0]:.1f} ({name(*worst_old[2:5])}; new there "
                f"{worst_old[1]:.1f})"
            ),
            (
                f"  - worst new: {worst_new[1]:.1f} ({name(*worst_new[2:5])}; old there "
                f"{worst_new[0]:.1f}; of the new misses there, "
                f"{100 * worst_new[5].new_low / max(reps - worst_new[5].new, 1):.0f}% with the "
                f"interval above the truth)"
            ),
            f"  - mean width new / old: {width_ratio:.2f}",
            (
                "  - old intervals leaving the figure's range: "
                f"{100 * sum(x[5].old_outside for x in cover) / (reps * len(cover)):.2f}%"
            ),
        ]
        if kind == "difference":
            null = [x for x in cover if x[2].delta == 0]
            rejects = [(100 * x[5].new_reject / reps, x) for x in null]
            old_rejects = [(100 * x[5].old_reject / reps, x) for x in null]
            top, top_x = max(rejects, key=lambda r: r[0])
            lines += [
                (
                    f"  - type I error (p < 0.05 under the null), {len(null)} cells, new: mean "
                    f"{np.mean([r for r, _ in rejects]):.2f}%, highest {top:.1f} "
                    f"({name(*top_x[2:5])}), above {ceiling:.1f}% ({LEVEL:g}% and two "
                    f"Monte-Carlo SEs) in {sum(r > ceiling for r, _ in rejects)}; old: mean "
                    f"{np.mean([r for r, _ in old_rejects]):.2f}%, highest "
                    f"{max(r for r, _ in old_rejects):.1f}, above {ceiling:.1f}% in "
                    f"{sum(r > ceiling for r, _ in old_rejects)}"
                ),
                (
                    "  - old p-value n/a with an interval that excludes 0: "
                    f"{sum(x[5].old_no_p for x in cover)} replications; new: never"
                ),
            ]
    return "\n".join(lines)


def below_floor(results) -> str:
    """Every outcome whose new coverage is below the floor, or type I error above the ceiling."""
    reps = next(iter(results.values()))[0].reps
    _, _, floor, ceiling = monte_carlo(reps)
    lines = []
    for cell, group, figure, t in sorted(
        every_outcome(results), key=lambda o: o[3].new / o[0].reps
    ):
        if 100 * t.new / cell.reps < floor:
            lines.append(
                f"- coverage {100 * t.new / cell.reps:.1f}% (old {100 * t.old / cell.reps:.1f}%):"
                f" {name(cell, group, figure)}; misses above the truth "
                f"{t.new_low} of {cell.reps - t.new}"
            )
    for cell, group, figure, t in every_outcome(results):
        if cell.kind == "difference" and cell.delta == 0 and 100 * t.new_reject / reps > ceiling:
            lines.append(
                f"- type I error {100 * t.new_reject / reps:.1f}% (old "
                f"{100 * t.old_reject / reps:.1f}%): {name(cell, group, figure)}"
            )
    return "\n".join(lines) or "- none"


def worst_table(results, problems) -> str:
    """Rows: G and order; columns: the groups; cells: the lowest coverage of any rate, epochs
    and figure (rates) and of any rate (differences), old / new, %."""
    head = "| G | " + " | ".join(GROUPS) + " |"
    lines = [head, "|--:|" + "--:|" * len(GROUPS)]
    for kind in ("rate", "difference"):
        for g in problems:
            for order in orders(g):
                row = []
                for group in GROUPS:
                    cover = [
                        (100 * t.old / c.reps, 100 * t.new / c.reps)
                        for c, tallies in results.values()
                        if (c.kind, c.problems, c.order) == (kind, g, order)
                        for (gr, _), t in tallies.items()
                        if gr == group
                    ]
                    row.append(f"{min(o for o, _ in cover):.1f} / {min(n for _, n in cover):.1f}")
                label = "rates" if kind == "rate" else "differences"
                lines.append(f"| {g} {order}, {label} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def null_table(results, group, problems) -> str:
    head = "| G | " + " | ".join(f"{r:.2f}" for r in RATES) + " |"
    lines = [head, "|--:|" + "--:|" * len(RATES)]
    for g in problems:
        for order in orders(g):
            row = []
            for rate in RATES:
                cell, tallies = results["difference", g, order, rate, 1, 0.0]
                t = tallies[group, "pass@1"]
                row.append(
                    f"{100 * t.old_reject / cell.reps:.1f} / {100 * t.new_reject / cell.reps:.1f}"
                )
            lines.append(f"| {g} {order} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def report(results, problems, complete: bool = True) -> str:
    """The summary and the short cells, and for a run of every rate, epochs and kind (not cut
    down by --rates, --epochs or --kinds) the tables."""
    reps = next(iter(results.values()))[0].reps
    cover_se, _, floor, ceiling = monte_carlo(reps)
    parts = [
        "### Summary",
        "",
        (
            f"Monte-Carlo SE of a cell at 95% coverage: {cover_se:.2f} points ({reps} reps); a "
            f"cell is short beyond it below {floor:.1f}%, and a type I error high beyond it "
            f"above {ceiling:.1f}%."
        ),
        "",
        summaries(results),
        "",
        f"### New cells below {floor:.1f}% coverage, or above {ceiling:.1f}% type I error",
        "",
        below_floor(results),
        "",
    ]
    if not complete:
        return "\n".join(parts)
    parts += [
        "### Lowest coverage of each group, old / new, %",
        "",
        worst_table(results, problems),
        "",
    ]
    tables = [
        ("rate", "pass@1", 1, "pass@1, one epoch"),
        ("rate", "pass@1", 5, "pass@1, 5 epochs"),
        ("rate", "exact_match", 1, "exact match, one epoch"),
        ("rate", "exact_match", 5, "exact match, 5 epochs"),
        ("rate", "pass@3", 5, "pass@3, 5 epochs"),
    ]
    for group in GROUPS:
        parts += [f"### {group}", ""]
        for kind, figure, epochs, label in tables:
            parts += [
                f"{label}: coverage of the true rate, % (old / new); columns the rate:",
                "",
                coverage_table(results, kind, group, figure, epochs, 0.0, problems),
                "",
            ]
        parts += [
            "Paired difference in pass@1 (delta 0.5): coverage, % (old / new); "
            "columns run A's rate:",
            "",
            coverage_table(results, "difference", group, "pass@1", 1, DELTA, problems),
            "",
            "Null (delta 0): coverage of 0, % (old / new):",
            "",
            coverage_table(results, "difference", group, "pass@1", 1, 0.0, problems),
            "",
            "Null (delta 0): p < 0.05, % (old / new):",
            "",
            null_table(results, group, problems),
            "",
        ]
    return "\n".join(parts)


def run_rate_cells(
    description: str,
    run_cell: Callable[[Any], Any],
    summary: Callable[[list[Any]], str],
    reps: int,
    problems: str,
    epochs: str,
) -> None:
    """The main of a script that weighs rate intervals on this simulation's rate cells
    (interval_caps.py, interval_shapes.py): its options (with these defaults), each cell run by
    `run_cell` on a pool of processes, and `summary` of them printed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--reps", type=int, default=reps, help="replications per cell")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--problems", default=problems, help="the G to run, e.g. 5,10")
    parser.add_argument("--rates", default=",".join(map(str, RATES)))
    parser.add_argument("--epochs", default=epochs, help="1, 5 or 1,5")
    args = parser.parse_args()
    args.problems = [int(g) for g in args.problems.split(",")]
    args.rates = [float(r) for r in args.rates.split(",")]
    args.epochs = [int(e) for e in args.epochs.split(",")]
    args.kinds = ["rate"]
    args.problem_phi, args.task_psi = 0.3, 20.0
    started = time.monotonic()
    todo = sorted(cells(args, real_sizes()), key=lambda c: c.problems, reverse=True)
    with multiprocessing.Pool(args.workers) as pool:
        done = pool.map(run_cell, todo, chunksize=1)
    print(
        f"G {args.problems}, rates {args.rates}, epochs {args.epochs}, seed {args.seed}\n\n"
        f"{summary(done)}\n\nwall time {time.monotonic() - started:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="replications per cell")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--problems", default=",".join(map(str, PROBLEMS)), help="the G to run, e.g. 5,10"
    )
    parser.add_argument(
        "--rates", default=",".join(map(str, RATES)), help="the true rates to run, e.g. 0.05,0.95"
    )
    parser.add_argument("--epochs", default="1,5", help="rates: the epochs to run, 1, 5 or 1,5")
    parser.add_argument(
        "--kinds", default="rate,difference", help="rate, difference or both (rate,difference)"
    )
    parser.add_argument("--problem-phi", type=float, default=0.3)
    parser.add_argument("--task-psi", type=float, default=20.0)
    parser.add_argument("--out", help="also write the tables as Markdown to this file")
    args = parser.parse_args()
    args.problems = [int(g) for g in args.problems.split(",")]
    args.rates = [float(r) for r in args.rates.split(",")]
    args.epochs = [int(e) for e in args.epochs.split(",")]
    args.kinds = args.kinds.split(",")
    unknown = set(args.rates) - set(RATES) or set(args.epochs) - {1, 5}
    if unknown or not set(args.kinds) <= {"rate", "difference"}:
        parser.error(f"rates are among {RATES}, epochs 1 or 5, kinds rate or difference")
    started = time.monotonic()
    version = hashlib.sha256(Path(intervals.__file__).read_bytes()).hexdigest()[:12]
    todo = cells(args, real_sizes())
    parameters = (
        f"intervals.py sha256 {version}; reps {args.reps} per cell, seed {args.seed}, "
        f"{args.workers} processes; G {args.problems}; rates {args.rates}; epochs "
        f"{args.epochs}; {', '.join(args.kinds)}; problems' phi "
        f"{args.problem_phi}, tasks' psi {args.task_psi}; differences: difficulty SD "
        f"{DIFFICULTY_SD}, task SD {TASK_SD}, run SD {RUN_SD}, delta 0 and {DELTA}"
    )
    print(parameters, flush=True)
    ordered = sorted(todo, key=lambda c: c.problems, reverse=True)
    with multiprocessing.Pool(args.workers) as pool:
        done = pool.map(run_cell, ordered, chunksize=1)
    results = {(c.kind, c.problems, c.order, c.rate, c.epochs, c.delta): (c, t) for c, t, _ in done}
    complete = (args.rates, args.epochs, sorted(args.kinds)) == (
        list(RATES), [1, 5], ["difference", "rate"]
    )  # fmt: skip
    text = report(results, args.problems, complete)
    cpu = sum(seconds for _, _, seconds in done)
    wall = time.monotonic() - started
    timing = f"wall time {wall:.1f} s; the cells' CPU time {cpu:.1f} s"
    print(text)
    if args.out:
        Path(args.out).write_text(
            f"# Coverage of 95% intervals\n\n{parameters}\n\n{text}\n\n{timing}\n"
        )
    print(timing)


if __name__ == "__main__":
    main()
