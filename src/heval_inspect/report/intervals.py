"""95% intervals for rates measured on tasks clustered by HumanEval problem.

A rate's interval is Wilson's score interval (Wilson 1927) on the effective number of tasks,
the design-effect form used for clustered surveys (Kish 1965; Korn and Graubard 1998):

- n_eff = p (1 - p) / SE^2, SE the clustered standard error of the rate p; kept between the
  number of problems (every task of a problem alike) and the number of independent trials (each
  task's epochs, or epochs / k for pass@k), each counted by its weight (Kish's
  (sum w)^2 / sum w^2 / trials); when p is 0 or 1, or SE is 0, the spread says nothing of the
  clustering, so n_eff is the number of problems (the cautious end);
- the quantile is Student's t. With one task per problem (HumanEval) its degrees of freedom are
  G - 1; with several, the clustered variance may rest on a few problems (a rare success in a
  heavily clustered subset), and they move towards the effective degrees of freedom of that
  variance, (sum_g u_g^2)^2 / sum_g u_g^4 over the problems' contributions u_g (Satterthwaite
  1946; kept between 1 and G - 1), in proportion to the share of tasks beyond one per problem:
  1 / df = w / df_u + (1 - w) / (G - 1), w = 1 - G / n (G and n counted by weight, as above).

Unlike figure +- 1.96 SE, it stays inside [0, 1], is not of zero width at 0 or 1, and keeps its
coverage with few problems and rates near 0 or 1 (`benchmarks/interval_coverage.py`). A rate
from fewer than two problems has no interval: one problem shows no spread to measure.

Figures are sums of rounded shares, so a rate that is 0 or 1 can come out 1e-16 away, and an
interval's end computed by the formula miss the figure it should meet by as much. A rate within
ROUNDING of 0 or 1 is that end, a standard error below ROUNDING is 0, and every interval is
`bounded`: inside its range ([0, 1] for a rate, [-1, 1] for a difference) and around its figure,
so that what is printed and drawn (an error bar's lengths) is never negative.

Paired differences (in [-1, 1], symmetric near 0) keep a normal-shaped interval D +- t SE, with
the same t in place of 1.96 (and in the p-value and the minimum detectable effect): the
simulation shows 1.96 too narrow with few problems. And when every task's difference is the same
(SE 0: typically two runs that agree on every task, common with few problems or rates near 0 or
1), the pairing shows no spread at all, and the interval is that of two independent rates:
Newcombe's (1998) square-and-add of the two runs' own intervals above.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
POWER = 0.80
NO_INTERVAL = "fewer than two problems: no spread to measure"
# Float error, far below any true rate or spread (about 1 / (tasks x epochs) at least, 1e-5).
ROUNDING = 1e-12


def snapped(value: float) -> float:
    """0, 1 or -1 for a value within ROUNDING of it; else the value."""
    for end in (0.0, 1.0, -1.0):
        if abs(value - end) < ROUNDING:
            return end
    return value


def bounded(
    value: float, interval: tuple[float, float] | None, lowest: float = 0.0, highest: float = 1.0
) -> tuple[float, float] | None:
    """The interval inside [lowest, highest] and around the value (which, computed apart from
    it, may lie outside it by float error)."""
    if interval is None:
        return None
    value = min(max(value, lowest), highest)
    low, high = interval
    return max(lowest, min(low, value)), min(highest, max(high, value))


@dataclass(frozen=True)
class Spread:
    """What an interval needs of a weighted mean over tasks clustered by problem."""

    value: float
    stderr: float  # clustered; NaN from fewer than two problems
    problems: int
    degrees_of_freedom: float  # effective, of the clustered variance
    tasks_weighted: float  # Kish's effective number of tasks: (sum w)^2 / sum w^2
    problems_weighted: float  # the same of the problems' total weights
    trials_weighted: float  # of independent trials: (sum w)^2 / sum (w^2 / trials)

    @property
    def quantile(self) -> float:
        return t_quantile(1 - (1 - CONFIDENCE) / 2, self.degrees_of_freedom)


def spread(
    values: np.ndarray, weights: np.ndarray, clusters: np.ndarray, trials: np.ndarray | None = None
) -> Spread:
    """The weighted mean of `values` and its clustered spread (`clusters`: each task's problem;
    `trials`: the independent trials behind each task's value, 1 if not given)."""
    share = np.asarray(weights, dtype=float) / math.fsum(weights)
    trials = np.ones(len(share)) if trials is None else np.maximum(np.asarray(trials, float), 1)
    # As the metric's weighted mean: every task at 1 makes 1.0, not 1 - 1e-16.
    value = snapped(math.fsum(share * values) / math.fsum(share))
    _, cluster_of = np.unique(np.asarray(clusters), return_inverse=True)
    contributions = np.bincount(cluster_of, weights=share * (values - value))
    problems = len(contributions)
    squares = math.fsum(contributions**2)
    tasks_weighted = 1 / math.fsum(share**2)
    problems_weighted = 1 / math.fsum(np.bincount(cluster_of, weights=share) ** 2)
    if problems < 2:
        stderr, freedom = math.nan, math.nan
    else:
        stderr = math.sqrt(problems / (problems - 1) * squares)
        fourths = math.fsum(contributions**4)
        carried = squares**2 / fourths if fourths > 0 else problems - 1
        if stderr < ROUNDING:  # every task alike, but for float error
            stderr, carried = 0.0, problems - 1
        carried = min(max(carried, 1.0), problems - 1.0)
        beyond_one = 1 - problems_weighted / tasks_weighted
        freedom = 1 / (beyond_one / carried + (1 - beyond_one) / (problems - 1))
    return Spread(
        value, stderr, problems, freedom, tasks_weighted, problems_weighted,
        trials_weighted=1 / math.fsum(share**2 / trials),
    )  # fmt: skip


def t_quantile(probability: float, degrees_of_freedom: float) -> float:
    return float(stats.t.ppf(probability, degrees_of_freedom))


def rate_interval(s: Spread) -> tuple[float, float] | None:
    """Wilson's interval on the effective number of tasks (see the module); None from fewer than
    two problems."""
    if s.problems < 2:
        return None
    p = snapped(min(max(s.value, 0.0), 1.0))
    if 0 < p < 1 and s.stderr > 0:
        n = min(max(p * (1 - p) / s.stderr**2, s.problems_weighted), s.trials_weighted)
    else:
        n = s.problems_weighted
    q2 = s.quantile**2
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = math.sqrt(q2) / (1 + q2 / n) * math.sqrt(p * (1 - p) / n + q2 / (4 * n * n))
    return bounded(p, (centre - half, centre + half))


def difference_interval(s: Spread, baseline: Spread, other: Spread) -> tuple[float, float] | None:
    """D +- t SE for a paired difference `s` (other minus baseline), or with SE 0 Newcombe's
    square-and-add of the two rates' intervals; None from fewer than two problems."""
    if s.problems < 2:
        return None
    if s.stderr > 0:
        half = s.quantile * s.stderr
        return bounded(s.value, (s.value - half, s.value + half), -1.0)
    (low_a, high_a), (low_b, high_b) = rate_interval(baseline), rate_interval(other)
    a, b = baseline.value, other.value
    return bounded(
        s.value,
        (s.value - math.hypot(b - low_b, high_a - a), s.value + math.hypot(high_b - b, a - low_a)),
        -1.0,
    )


def p_value(s: Spread) -> float | None:
    """Two-sided, of D = 0 against Student's t with the effective degrees of freedom; None when
    there is no spread to test by."""
    if s.problems < 2 or not s.stderr > 0:
        return None
    return float(2 * stats.t.sf(abs(s.value / s.stderr), s.degrees_of_freedom))


def minimum_detectable(s: Spread) -> float:
    """(t_0.975 + t_0.80) x SE: the smallest true difference found with 80% power at 5%; NaN
    with no spread to go by."""
    if not s.stderr > 0:
        return math.nan
    return (s.quantile + t_quantile(POWER, s.degrees_of_freedom)) * s.stderr
