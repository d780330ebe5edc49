"""benchmarks/interval_coverage.py computes the report's intervals for many replications at once:
those batched formulas must be the package's own (`report/intervals.py`) and the verbatim old
ones, replication by replication, or the benchmark measures something the report does not do."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from heval_inspect.report import intervals

PATH = Path(__file__).parents[1] / "benchmarks" / "interval_coverage.py"
SPEC = importlib.util.spec_from_file_location("interval_coverage", PATH)
assert SPEC is not None and SPEC.loader is not None
coverage = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(coverage)

FIELDS = ("value", "stderr", "degrees_of_freedom", "tasks_weighted", "problems_weighted",
          "trials_weighted")  # fmt: skip


def random_tasks(rng: np.random.Generator, reps: int, problems: int, weighting: str):
    """`reps` replications of `problems` problems with 1 to 40 tasks each (now and then one
    problem with hundreds, as multi-line infilling has), weighted as the report's groups are."""
    sizes = rng.integers(1, 12, (reps, problems))
    big = rng.random((reps, problems)) < 0.1
    sizes[big] = rng.integers(50, 400, int(big.sum()))
    problem = np.repeat(np.arange(reps * problems), sizes.ravel())
    if weighting == "ones":
        weights = np.ones(len(problem))
    elif weighting == "per problem":  # problem_macro
        weights = 1 / np.bincount(problem)[problem]
    else:  # anything positive, e.g. mean_of_subsets' 1 / size of the task's subset
        weights = rng.choice([1 / 3, 1 / 7, 1 / 29, 1.0, 2.5], len(problem))
    return coverage.Tasks(problem, weights, reps, problems)


def random_values(rng: np.random.Generator, tasks, kind: str) -> np.ndarray:
    """Per-task values of each replication: binary, shares of 5 epochs, or paired differences;
    some replications with every task alike (0, 1, -1 or a share), some nearly so."""
    rate = rng.choice([0.0, 0.02, 0.3, 0.5, 0.97, 1.0], tasks.reps)[tasks.rep]
    problem_rate = rng.beta(0.3, 0.3, tasks.reps * tasks.problems)[tasks.problem]
    p = np.clip(np.where(rng.random(tasks.reps)[tasks.rep] < 0.5, rate, problem_rate), 0, 1)
    if kind == "binary":
        x = (rng.random(len(p)) < p).astype(float)
    elif kind == "epochs":
        x = rng.binomial(5, p) / 5
    else:
        x = (rng.random(len(p)) < p).astype(float) - (rng.random(len(p)) < 0.5 * p)
    alike = rng.random(tasks.reps) < 0.15
    x[alike[tasks.rep]] = rng.choice([0.0, 1.0, 0.6, -1.0 if kind == "difference" else 1.0])
    return x


def scalar(tasks, i: int, x: np.ndarray):
    part = tasks.part(i)
    return x[part], tasks.weights[part], tasks.problem[part]


@pytest.mark.parametrize("problems", [2, 3, 5, 17, 40])
@pytest.mark.parametrize("weighting", ["ones", "per problem", "any"])
@pytest.mark.parametrize("kind", ["binary", "epochs"])
def test_batched_rate_intervals_are_the_packages_and_the_old_ones(problems, weighting, kind):
    rng = np.random.default_rng([problems, len(weighting), len(kind)])
    tasks = random_tasks(rng, 60, problems, weighting)
    x = random_values(rng, tasks, kind)
    trials = 5 / 3 if kind == "epochs" else 1.0
    new, old = coverage.new_spreads(tasks, x, trials), coverage.old_spreads(tasks, x, trials)
    new_low, new_high = coverage.new_rate_intervals(new)
    old_low, old_high = coverage.old_rate_intervals(old)
    for i in range(tasks.reps):
        values, weights, clusters = scalar(tasks, i, x)
        each = np.full(len(values), trials)
        s = intervals.spread(values, weights, clusters, each)
        for name in FIELDS:
            assert getattr(new.at(i), name) == pytest.approx(getattr(s, name), rel=1e-12, abs=1e-12)
        assert (new_low[i], new_high[i]) == pytest.approx(intervals.rate_interval(s), abs=1e-12)
        o = coverage.old_spread(values, weights, clusters, each)
        # The old code's exact-zero tests (SE > 0) are reproduced exactly, not to 1e-12.
        assert (old.stderr[i] > 0) == (o.stderr > 0)
        for name in FIELDS:
            assert getattr(old.at(i), name) == pytest.approx(getattr(o, name), rel=1e-12, abs=1e-12)
        assert (old_low[i], old_high[i]) == pytest.approx(coverage.old_rate_interval(o), abs=1e-12)


@pytest.mark.parametrize("problems", [2, 5, 17])
@pytest.mark.parametrize("weighting", ["ones", "per problem", "any"])
def test_batched_differences_and_p_values_are_the_packages_and_the_old_ones(problems, weighting):
    rng = np.random.default_rng([problems, len(weighting), 7])
    tasks = random_tasks(rng, 80, problems, weighting)
    a = random_values(rng, tasks, "binary")
    b = np.where(rng.random(len(a)) < 0.7, a, random_values(rng, tasks, "binary"))
    # Some replications with one run passing everything and the other nothing (SE 0, D = +-1).
    flip = rng.random(tasks.reps)[tasks.rep] < 0.1
    a[flip], b[flip] = 1.0, 0.0
    new = [coverage.new_spreads(tasks, x) for x in (a, b, b - a)]
    old = [coverage.old_spreads(tasks, x) for x in (a, b, b - a)]
    new_low, new_high = coverage.new_difference_intervals(new[2], new[0], new[1])
    p = coverage.new_p_values(new[2], new[0], new[1])
    old_low, old_high = coverage.old_difference_intervals(old[2], old[0], old[1])
    old_p = coverage.old_p_values(old[2])
    seen_zero_se = 0
    for i in range(tasks.reps):
        (xa, weights, clusters), (xb, _, _) = scalar(tasks, i, a), scalar(tasks, i, b)
        s_a, s_b, s_d = (intervals.spread(x, weights, clusters) for x in (xa, xb, xb - xa))
        assert (new_low[i], new_high[i]) == pytest.approx(
            intervals.difference_interval(s_d, s_a, s_b), abs=1e-12
        )
        assert p[i] == pytest.approx(intervals.p_value(s_d, s_a, s_b), abs=1e-12)
        o_a, o_b, o_d = (coverage.old_spread(x, weights, clusters) for x in (xa, xb, xb - xa))
        assert (old_low[i], old_high[i]) == pytest.approx(
            coverage.old_difference_interval(o_d, o_a, o_b), abs=1e-12
        )
        expected = coverage.old_p_value(o_d)
        assert (math.isnan(old_p[i]) and expected is None) or old_p[i] == pytest.approx(
            expected, abs=1e-12
        )
        seen_zero_se += s_d.stderr == 0 and s_d.value != 0
    assert seen_zero_se > 0  # the root-search path of the p-value was exercised


def test_the_batched_bias_reduction_is_the_packages():
    rng = np.random.default_rng(3)
    for problems in (2, 3, 10, 164):
        shares = rng.dirichlet(rng.choice([0.05, 1.0, 20.0]) * np.ones(problems), 50)
        # Up to one problem with 99.9% of the weight (multi-line's largest share of a run of
        # five or more problems is about 0.7); at 100% both sides divide by 0.
        shares = shares[shares.max(axis=1) < 0.999]
        scale, design = coverage.bias_reductions(shares)
        for row, each_scale, each_design in zip(shares, scale, design, strict=True):
            expected_scale, expected_design = intervals.bias_reduction(row)
            assert each_scale == pytest.approx(expected_scale, rel=1e-12)
            assert each_design == pytest.approx(expected_design, rel=1e-12)
