"""95% intervals for rates measured on tasks clustered by HumanEval problem.

The spread of a figure T = sum_i w_i x_i (weights summing to 1) over G problems, problem g
carrying the share W_g of the weight and contributing u_g = sum_{i in g} w_i (x_i - T):

- the standard error is bias-reduced (CR2: Bell and McCaffrey 2002; Pustejovsky and Tipton
  2018): SE^2 = sum_g u_g^2 / (1 - 2 W_g + sum_h W_h^2). A problem that carries much of the
  weight pulls T towards itself, so its own u_g understates its part of the variance; each
  contribution is scaled so that SE^2 is unbiased when each problem's tasks are alike (the
  working model: intraclass correlation 1, as HumanEval's problems mostly pass or fail whole).
  With problems of equal weight this is G / (G - 1) sum_g u_g^2, the metric's own standard error;
- the degrees of freedom are Bell and McCaffrey's (as recommended by Imbens and Kolesar 2016)
  under the same working model (`bias_reduction`), which depend on the weights alone: G - 1 with
  equal weights, about 1 when one problem carries most of the weight; with several tasks per
  problem they move towards the effective degrees of freedom of the variance observed,
  (sum_g v_g)^2 / sum_g v_g^2 over the problems' scaled contributions v_g (Satterthwaite 1946;
  kept between 1 and the design's), in proportion to the share of tasks beyond one per problem:
  1 / df = w / df_v + (1 - w) / df_BM, w = 1 - G / n (G and n counted by weight: Kish's
  (sum w)^2 / sum w^2 of the problems' and of the tasks' weights). A rare success (or failure)
  carried by one or two problems then gets the width that warrants.

A rate's interval is Wilson's score interval (Wilson 1927) on the effective number of tasks, the
design-effect form used for clustered surveys (Kish 1965; Korn and Graubard 1998), with Student's
t quantile on those degrees of freedom:

- n_eff = p (1 - p) / SE^2, kept between the effective number of problems G (every task of a
  problem alike) and the smaller of the independent trials (each task's epochs, or epochs / k
  for pass@k) and G^2, each counted by its weight; when p is 0 or 1, or SE is 0, the spread says
  nothing of the clustering, so n_eff is G (the cautious end).

The cap at G^2 keeps SE^2 at least p (1 - p) / G^2, as if the problems' intraclass correlation
were at least 1 / G: about what one problem in G of another kind adds (one that fails, or
matches, where the others pass, or do not). A run of G problems cannot rule that out: a kind
that one problem in G has is missing from about a third of such runs ((1 - 1/G)^G), and those
runs, their problems all alike, show the smallest spread exactly when their rate is furthest
from the truth, as when a few problems' rare failures decide a rate near 1. More tasks or epochs
of the problems seen say nothing of the problems not seen, so the cap counts problems. Without it,
the cap at the trials alone counted each epoch as a trial, and with several epochs such runs got
too narrow an interval. A design effect for the epochs' correlation within a task left most of
those short (in such runs the problems seen are alike but their epochs do vary), and capping at
the tasks (epochs not counted) many (docs/benchmarks.md has the simulation).

Wilson's interval errs on one side near 0 and 1: the count of the rarer outcome is skewed, and
its end towards the nearer of 0 and 1 lies too far in (with one task per problem, 20 problems
and a true rate of 0.025, its lower end at 2 passes is above 0.025, which gives 2 passes or more
9% of the time: 91% coverage, every miss above the truth). That end reaches as far as Jeffreys'
(Brown, Cai and DasGupta 2001): the 2.5% point of Beta(x + 1/2, n - x + 1/2) (the 97.5% point
for the upper end) on Korn and Graubard's degrees-of-freedom-adjusted n = n_eff (z / q)^2,
x = p n. Wilson's interval with q on n_eff is Wilson's with z on that n, and Jeffreys' follows
the count's skew. The other end stays Wilson's (at p = 1/2, both): Jeffreys' far end is mostly
nearer, and where it is not (few effective trials) taking it added width and no coverage;
Jeffreys' alone is short elsewhere (its upper end at no passes, about 2.5 / n, is too near). On a
binomial count (one task per problem, one epoch) of 5 to 164 problems the exact coverage is then
at least 93.9% at every rate from 0.02 to 0.98 (Wilson's alone: 89.9%), for intervals 1 to 2%
wider; `benchmarks/interval_shapes.py` weighs the shapes on the simulation.

It stays inside [0, 1], is not of zero width at 0 or 1, and keeps its coverage with few problems,
problems of very unequal numbers of tasks (multi-line infilling: 1 to 435 per problem), rates
near 0 or 1, and several epochs (`benchmarks/interval_coverage.py`). A rate from fewer than two
problems has no interval: one problem shows no spread to measure.

Figures are sums of rounded shares, so a rate that is 0 or 1 can come out 1e-16 away, and an
interval's end computed by the formula miss the figure it should meet by as much. A rate within
ROUNDING of 0 or 1 is that end, a standard error below ROUNDING is 0, and every interval is
`bounded`: inside its range ([0, 1] for a rate, [-1, 1] for a difference) and around its figure,
so that what is printed and drawn (an error bar's lengths) is never negative.

Paired differences (in [-1, 1], symmetric near 0) keep a normal-shaped interval D +- t SE, with
the same SE and t, cut to [-1, 1] (a difference cannot leave it, so the cut loses no coverage).
When every task's difference is the same (SE 0: typically two runs that agree on every task,
common with few problems or rates near 0 or 1), the pairing shows no spread at all, and the
interval is that of two independent rates: Newcombe's (1998) square-and-add of the two runs' own
intervals above. The p-value is the smallest 1 - confidence at which the interval leaves out 0:
with SE > 0 the two-sided t test's, and with SE 0 found on Newcombe's interval, so that it is
below 0.05 exactly when the 95% interval leaves out 0.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

CONFIDENCE = 0.95
POWER = 0.80
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
    stderr: float  # clustered, bias-reduced (CR2); NaN from fewer than two problems
    problems: int
    degrees_of_freedom: float  # effective, of the clustered variance
    tasks_weighted: float  # Kish's effective number of tasks: (sum w)^2 / sum w^2
    problems_weighted: float  # the same of the problems' total weights
    trials_weighted: float  # of independent trials: (sum w)^2 / sum (w^2 / trials)

    @property
    def quantile(self) -> float:
        return quantile(self, CONFIDENCE)


def quantile(s: Spread, confidence: float) -> float:
    """Student's t quantile of a two-sided interval at `confidence`."""
    return t_quantile(1 - (1 - confidence) / 2, s.degrees_of_freedom)


def spread(
    values: np.ndarray, weights: np.ndarray, clusters: np.ndarray, trials: np.ndarray | None = None
) -> Spread:
    """The weighted mean of `values` and its clustered spread (`clusters`: each task's problem;
    `trials`: the independent trials behind each task's value, 1 if not given)."""
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=float)
    total = math.fsum(weights)
    share = weights / total
    trials = np.ones(len(share)) if trials is None else np.maximum(np.asarray(trials, float), 1)
    # Tasks that all have one value have that value, exactly, and no spread: shares that sum to
    # 1 - 1e-16 gave a run that passed everything 0.9999999999999998 and a standard error of
    # 1e-17, and so an interval of zero width just below 1.
    alike = len(values) > 0 and bool(np.ptp(values) == 0)
    value = snapped(float(values[0]) if alike else math.fsum(weights * values) / total)
    _, cluster_of = np.unique(np.asarray(clusters), return_inverse=True)
    problem_share = np.bincount(cluster_of, weights=share)
    residuals = np.zeros(len(values)) if alike else values - value
    contributions = np.bincount(cluster_of, weights=share * residuals)
    problems = len(contributions)
    tasks_weighted = 1 / math.fsum(share**2)
    problems_weighted = 1 / math.fsum(problem_share**2)
    if problems < 2:
        stderr, freedom = math.nan, math.nan
    else:
        scale, design = bias_reduction(problem_share)
        scaled = scale * contributions**2
        stderr = math.sqrt(math.fsum(scaled))
        fourths = math.fsum(scaled**2)
        carried = math.fsum(scaled) ** 2 / fourths if fourths > 0 else design
        if stderr < ROUNDING:  # every task alike, but for float error
            stderr, carried = 0.0, design
        carried = min(max(carried, 1.0), design)
        beyond_one = max(1 - problems_weighted / tasks_weighted, 0.0)
        freedom = 1 / (beyond_one / carried + (1 - beyond_one) / design)
    return Spread(
        value, stderr, problems, freedom, tasks_weighted, problems_weighted,
        trials_weighted=1 / math.fsum(share**2 / trials),
    )  # fmt: skip


def bias_reduction(problem_share: np.ndarray) -> tuple[np.ndarray, float]:
    """CR2's factor for each problem's squared contribution, and Bell and McCaffrey's degrees of
    freedom, for a weighted mean whose problems carry the shares W (summing to 1), under the
    working model of problems' means independent with one variance.

    A problem's residual e_g = y_g - sum_h W_h y_h has variance 1 - 2 W_g + sum_h W_h^2 (times
    the problems' variance); the estimate sum_g W_g^2 e_g^2 / that is unbiased for the variance
    of the mean, sum_g W_g^2. It is a quadratic form in the y_g, whose Satterthwaite degrees of
    freedom are (sum_g a_g C_gg)^2 / sum_{g,h} a_g a_h C_gh^2, a_g = W_g^2 / (1 - 2 W_g + S),
    C the covariance of the residuals: C_gh = [g = h] - W_g - W_h + S, S = sum_h W_h^2.
    """
    squares = math.fsum(problem_share**2)
    covariance = squares - problem_share[:, None] - problem_share[None, :]
    covariance[np.diag_indices_from(covariance)] += 1
    scale = 1 / np.diag(covariance)
    loads = scale * problem_share**2
    design = squares**2 / float(loads @ covariance**2 @ loads)
    return scale, min(design, len(problem_share) - 1.0)


def t_quantile(probability: float, degrees_of_freedom: float) -> float:
    return float(stats.t.ppf(probability, degrees_of_freedom))


def rate_interval(s: Spread, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Wilson's interval on the effective number of tasks, its end towards the nearer of 0 and 1
    reaching as far as Jeffreys' (see the module); None from fewer than two problems."""
    if s.problems < 2:
        return None
    p = snapped(min(max(s.value, 0.0), 1.0))
    if 0 < p < 1 and s.stderr > 0:
        n = min(max(p * (1 - p) / s.stderr**2, s.problems_weighted), most_trials(s))
    else:
        n = s.problems_weighted
    q2 = quantile(s, confidence) ** 2
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = math.sqrt(q2) / (1 + q2 / n) * math.sqrt(p * (1 - p) / n + q2 / (4 * n * n))
    low, high = centre - half, centre + half
    side = 0.0 if abs(p - 0.5) < ROUNDING else p - 0.5  # float error decides no side
    if q2 > 0 and 0 < p < 1 and side != 0:
        # Jeffreys' on Korn and Graubard's n (Wilson's with q on n is Wilson's with z on it).
        tail = (1 - confidence) / 2
        m = n * float(stats.norm.isf(tail)) ** 2 / q2
        a, b = p * m + 0.5, (1 - p) * m + 0.5
        if side < 0:
            low = min(low, float(stats.beta.ppf(tail, a, b)))
        else:
            high = max(high, float(stats.beta.isf(tail, a, b)))
    return bounded(p, (low, high))


def most_trials(s: Spread) -> float:
    """The most independent trials a rate's spread may count as: its trials (tasks x epochs), and
    no more than the square of its problems (see the module)."""
    return min(s.trials_weighted, s.problems_weighted**2)


def difference_interval(
    s: Spread, baseline: Spread, other: Spread, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """D +- t SE for a paired difference `s` (other minus baseline), cut to [-1, 1], or with SE 0
    Newcombe's square-and-add of the two rates' intervals; None from fewer than two problems."""
    if s.problems < 2:
        return None
    if s.stderr > 0:
        half = quantile(s, confidence) * s.stderr
        return bounded(s.value, (s.value - half, s.value + half), -1.0)
    rate_a, rate_b = rate_interval(baseline, confidence), rate_interval(other, confidence)
    if rate_a is None or rate_b is None:  # a rate of fewer than two problems
        return None
    (low_a, high_a), (low_b, high_b) = rate_a, rate_b
    a, b = baseline.value, other.value
    return bounded(
        s.value,
        (s.value - math.hypot(b - low_b, high_a - a), s.value + math.hypot(high_b - b, a - low_a)),
        -1.0,
    )


def p_value(s: Spread, baseline: Spread, other: Spread) -> float | None:
    """Two-sided, of D = 0: the smallest 1 - confidence at which `difference_interval` leaves out
    0 (the t test's with SE > 0); None from fewer than two problems."""
    if s.problems < 2:
        return None
    if s.stderr > 0:
        return float(2 * stats.t.sf(abs(s.value / s.stderr), s.degrees_of_freedom))
    if s.value == 0:
        return 1.0

    def nearest_zero(confidence: float) -> float:
        interval = difference_interval(s, baseline, other, confidence)
        assert interval is not None  # two problems or more, checked above
        low, high = interval
        return low if s.value > 0 else -high  # > 0 while the interval leaves out 0

    # At confidence 0 the interval is [D, D]; towards 1 the rates' intervals reach [0, 1], and
    # the difference's then holds 0.
    top = 1 - 1e-15
    if nearest_zero(top) > 0:
        return 1 - top
    return 1 - optimize.brentq(nearest_zero, 0.0, top, xtol=1e-14)


def minimum_detectable(s: Spread) -> float:
    """(t_0.975 + t_0.80) x SE: the smallest true difference found with 80% power at 5%; NaN
    with no spread to go by."""
    if not s.stderr > 0:
        return math.nan
    return (s.quantile + t_quantile(POWER, s.degrees_of_freedom)) * s.stderr
