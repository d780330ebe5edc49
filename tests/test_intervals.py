"""The report's 95% intervals (`report/intervals.py`) on small hand-made cases: inside [0, 1],
never of zero width, none from one problem, Wilson's with Student's t on one task per problem; and
how the report writes p-values."""

import math

import numpy as np
import pytest
from scipy import stats

from heval_inspect.report.intervals import (
    difference_interval,
    minimum_detectable,
    p_value,
    rate_interval,
    spread,
)
from heval_inspect.report.numbers import p_value as shown_p


def one_task_per_problem(values: list[float]):
    return spread(np.array(values, dtype=float), np.ones(len(values)), np.arange(len(values)))


def test_one_task_per_problem_is_wilsons_interval_with_students_t_and_jeffreys_near_end():
    values = [1, 1, 1, 0, 1, 1, 1, 1]
    g, p = len(values), 7 / 8
    q = stats.t.ppf(0.975, g - 1)
    centre = (p + q * q / (2 * g)) / (1 + q * q / g)
    half = q / (1 + q * q / g) * math.sqrt(p * (1 - p) / g + q * q / (4 * g * g))
    # The end towards 1 reaches as far as Jeffreys' on Korn and Graubard's n = g (z / q)^2.
    m = g * (stats.norm.ppf(0.975) / q) ** 2
    jeffreys = stats.beta.isf(0.025, p * m + 0.5, (1 - p) * m + 0.5)
    assert rate_interval(one_task_per_problem(values)) == pytest.approx(
        (centre - half, max(centre + half, jeffreys)), abs=1e-12
    )


@pytest.mark.parametrize("problems", [5, 10, 20, 40, 80, 164])
def test_one_task_per_problem_covers_rates_near_0_and_1_as_a_binomial_interval_should(problems):
    # One task per problem and one epoch: the count of passes is binomial. Wilson's lower end at
    # 2 or 3 passes lay above rates that give that many more often than 2.5% (at 20 problems and a
    # rate of 0.025, 91.2% coverage, every miss above the truth); exact coverage at 93% or more.
    ends = [rate_interval(one_task_per_problem([1.0] * x + [0.0] * (problems - x)))
            for x in range(problems + 1)]  # fmt: skip
    low, high = np.array(ends).T
    counts = np.arange(problems + 1)
    for rate in [0.025, 0.05, 0.1, 0.2, 0.4, 0.5, 0.6, 0.8, 0.9, 0.95, 0.975]:
        covered = (low <= rate) & (rate <= high)
        assert float(stats.binom.pmf(counts, problems, rate) @ covered) >= 0.93, rate


@pytest.mark.parametrize("values", [[1] * 5, [0] * 5, [1] * 164, [0] * 164])
def test_an_interval_at_0_or_1_stays_in_range_and_has_width(values):
    low, high = rate_interval(one_task_per_problem(values))
    assert 0 <= low < high <= 1
    # At 1, the lower bound is Wilson's with all problems passing: (n / (n + q^2)).
    q2 = stats.t.ppf(0.975, len(values) - 1) ** 2
    bound = len(values) / (len(values) + q2)
    assert (low if values[0] else 1 - high) == pytest.approx(bound, abs=1e-12)


def test_intervals_stay_in_range_where_figure_plus_minus_two_errors_did_not():
    # A subset of 2 problems x 3 tasks, nearly all passing: the old 0.833 +- 1.96 x 0.167
    # reached 1.16.
    s = spread(np.array([1, 1, 1, 1, 1, 0.0]), np.ones(6), np.array([0, 0, 0, 1, 1, 1]))
    assert s.value + 1.959963984540054 * s.stderr > 1
    low, high = rate_interval(s)
    assert 0 <= low < s.value < high <= 1


def test_a_figure_from_one_problem_has_no_interval():
    s = spread(np.array([1.0, 0.0, 1.0]), np.ones(3), np.zeros(3))
    assert s.problems == 1 and math.isnan(s.stderr)
    assert rate_interval(s) is None and difference_interval(s, s, s) is None
    assert p_value(s, s, s) is None


def test_epochs_count_as_trials_up_to_their_number():
    # 40 problems, one task each, 4 epochs: a task's pass@1 is a share of 4 draws, so the
    # effective number of trials may exceed the 40 tasks, up to 160; with one epoch, 40.
    values = np.tile([1.0, 0.75, 0.5, 0.25, 0.75], 8)
    many = spread(values, np.ones(40), np.arange(40), np.full(40, 4))
    one = spread(values, np.ones(40), np.arange(40))
    assert (many.trials_weighted, one.trials_weighted) == pytest.approx((160, 40))
    n = many.value * (1 - many.value) / many.stderr**2
    assert 40 < n < 160
    (low, high), (low_1, high_1) = rate_interval(many), rate_interval(one)
    assert low_1 < low < high < high_1


def wilson(p: float, n: float, degrees_of_freedom: float) -> tuple[float, float]:
    """Wilson's interval on n with Student's t, its end towards the nearer of 0 and 1 as far as
    Jeffreys' on n (z / t)^2."""
    q2 = stats.t.ppf(0.975, degrees_of_freedom) ** 2
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = math.sqrt(q2) / (1 + q2 / n) * math.sqrt(p * (1 - p) / n + q2 / (4 * n * n))
    m = n * stats.norm.ppf(0.975) ** 2 / q2
    jeffreys = stats.beta(p * m + 0.5, (1 - p) * m + 0.5)
    low, high = centre - half, centre + half
    if p < 0.5:
        return min(low, jeffreys.ppf(0.025)), high
    return (low, max(high, jeffreys.isf(0.025))) if p > 0.5 else (low, high)


def test_problems_alike_count_as_no_more_than_the_square_of_the_problems():
    # 8 problems of 30 tasks, 5 epochs each, every problem passing 3 of 5 on each task but the
    # odd task (as a run that drew none of a few problems' rare failures might): the spread is
    # small and its n_eff far above 8^2 = 64, but 8 problems cannot rule out a ninth of another
    # kind, so the interval is Wilson's on 64, not on the 1,200 trials.
    values = np.tile(np.r_[np.full(29, 0.6), 0.8], 8)
    values[-1] = 0.4
    clusters = np.repeat(np.arange(8), 30)
    s = spread(values, np.ones(240), clusters, np.full(240, 5))
    assert s.trials_weighted == pytest.approx(1200)
    assert s.value * (1 - s.value) / s.stderr**2 > 1200
    assert rate_interval(s) == pytest.approx(wilson(s.value, 64, s.degrees_of_freedom), abs=1e-12)


def test_weights_count_as_kish_effective_numbers():
    # Two tasks on problem 0 weigh 1/4 each, one on problem 1 weighs 1/2.
    s = spread(np.array([1.0, 0.0, 1.0]), np.array([1, 1, 2]), np.array([0, 0, 1]))
    assert s.value == pytest.approx(0.75)
    assert s.tasks_weighted == pytest.approx(1 / (1 / 16 + 1 / 16 + 1 / 4))
    assert s.problems_weighted == pytest.approx(2.0)


def test_a_difference_uses_students_t_on_the_problems():
    d = [0, -1, -1, -1, 0, -1, 0, 0, -1, 0]
    s = one_task_per_problem(d)
    baseline, other = one_task_per_problem([1] * 10), one_task_per_problem([1 + x for x in d])
    t = stats.t(len(d) - 1)
    assert p_value(s, baseline, other) == pytest.approx(
        2 * t.sf(abs(s.value / s.stderr)), abs=1e-12
    )
    assert difference_interval(s, baseline, other) == pytest.approx(
        (s.value - t.ppf(0.975) * s.stderr, s.value + t.ppf(0.975) * s.stderr), abs=1e-12
    )
    assert minimum_detectable(s) == pytest.approx((t.ppf(0.975) + t.ppf(0.8)) * s.stderr)


@pytest.mark.parametrize("rate", [0, 1, 0.6])
def test_two_runs_that_agree_on_every_task_get_the_interval_of_two_independent_rates(rate):
    # Every per-task difference 0, so SE 0: D +- t SE would be [0, 0], certainty from nothing.
    runs = [1.0] * int(10 * rate) + [0.0] * (10 - int(10 * rate))
    a = b = one_task_per_problem(runs)
    s = one_task_per_problem([0.0] * 10)
    (low_a, high_a), (low_b, high_b) = rate_interval(a), rate_interval(b)
    low, high = difference_interval(s, a, b)
    assert low == pytest.approx(-math.hypot(b.value - low_b, high_a - a.value), abs=1e-12)
    assert high == pytest.approx(math.hypot(high_b - b.value, a.value - low_a), abs=1e-12)
    assert -1 < low < 0 < high < 1
    # D = 0 lies in the interval at every confidence: p 1, not n/a.
    assert p_value(s, a, b) == 1 and math.isnan(minimum_detectable(s))


def test_with_no_spread_the_p_value_is_that_of_newcombes_interval():
    # One run passes all 5 tasks, the other none: SE 0, and the interval leaves out 0, so the
    # p-value must say so (it was n/a).
    a, b = one_task_per_problem([1.0] * 5), one_task_per_problem([0.0] * 5)
    s = one_task_per_problem([-1.0] * 5)
    low, high = difference_interval(s, a, b)
    assert -1 <= low < high < 0
    p = p_value(s, a, b)
    assert p is not None and p < 0.05
    # At confidence 1 - p the interval's nearer end is 0.
    assert difference_interval(s, a, b, 1 - p)[1] == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize(
    "p, shown",
    [(1.0, "1.0"), (0.5, "0.50"), (0.026, "0.026"), (0.0123, "0.012"), (0.001, "0.0010"),
     (0.00099, "<0.001"), (2.2e-05, "<0.001"), (None, "n/a")],
)  # fmt: skip
def test_p_values_have_two_significant_digits(p, shown):
    assert shown_p(p) == shown


def first_problems_run(name: str, passes, problems: int = 10, epochs: int = 2):
    """A run of the four infilling subsets on the first `problems` HumanEval problems (their real
    numbers of tasks), each task's epochs passing as `passes(task_id, epoch)` says."""
    from heval_inspect.data import SUBSETS, load_official
    from heval_inspect.report.runs import Run, Samples
    from heval_inspect.tasks import problem_id

    kept = {f"HumanEval/{i}" for i in range(problems)}
    rows = [
        (r["task_id"], epoch, subset, problem_id(r["task_id"]), float(ok), float(ok), float(ok),
         "passed" if ok else "wrong answer", "")
        for subset, file in SUBSETS.items()
        for r in load_official(file)
        if problem_id(r["task_id"]) in kept
        for epoch in range(1, epochs + 1)
        for ok in [passes(r["task_id"], epoch)]
    ]  # fmt: skip
    return Run(
        name=name, model="none/none", task="humaneval_infilling", version="1-A",
        comparability=1, problems_sha256=("x",), completions_sha256=(), timeout=3.0,
        memory_bytes=None, ks=[1, 2], per_subset=True, files=[f"{name}.eval"],
        samples=Samples.from_rows(rows, 0),
    )  # fmt: skip


@pytest.mark.data
def test_every_figure_of_ten_problems_has_an_interval_in_range_and_a_p_value():
    from heval_inspect.report.stats import compare, results

    runs = [
        first_problems_run("all-pass", lambda task, epoch: True),
        first_problems_run("all-fail", lambda task, epoch: False),
        first_problems_run("some", lambda task, epoch: (sum(map(ord, task)) + epoch) % 3 != 0),
    ]
    figures = []
    for run in runs:
        result = results(run)
        figures += [f for named in result.groups.values() for f in named.values()]
        figures += list(result.pass_at.values())
    assert len(figures) == 3 * (7 * 4 + 2)  # 4 subsets and 3 blends x pass@1, @2, 2 exact
    for f in figures:
        assert 0 <= f.low <= f.value <= f.high <= 1 and f.low < f.high, f
    differences = [d for a in runs for b in runs if a is not b for d in compare(a, b).differences]
    assert len(differences) == 6 * 7 * 4
    for d in differences:
        assert -1 <= d.low <= d.difference <= d.high <= 1 and d.low < d.high, d
        assert d.p_value is not None and 0 < d.p_value <= 1, d
        # The p-value and the interval say the same of 0.
        assert (d.p_value < 0.05) == (not d.low <= 0 <= d.high), d
    # All-pass against all-fail: every task differs by 1 (SE 0, Newcombe's interval); on ten
    # problems of one task each that is significant.
    extreme = [d for d in differences if abs(d.difference) == 1]
    assert len(extreme) >= 2 * 7 * 4  # all-pass and all-fail, both ways; 'some' may add
    assert all(d.p_value < 0.05 for d in extreme if d.group == "random_span_light")


def test_a_run_that_passes_every_task_is_at_1_with_no_spread_whatever_its_weights():
    # 49 shares of 1/49 add up to 0.9999999999999999: the figure was that, with a standard
    # error of 1e-17 and an interval of about [0.99999999999999, 1] (misses of high rates).
    s = spread(np.ones(49), np.ones(49), np.arange(49) % 7)
    assert s.value == 1 and s.stderr == 0
    low, high = rate_interval(s)
    assert high == 1 and low < 0.9


def test_the_standard_error_is_bias_reduced_for_a_problem_that_carries_most_tasks():
    # Every task of a problem alike (the working model): the mean of a problem of weight W_g has
    # variance sum W_g^2 sigma^2, and CR2's estimate is unbiased for it, averaged over draws;
    # the metric's CR1 one falls short when one problem carries most of the weight.
    sizes = np.array([28, 105, 1, 21, 3])
    clusters = np.repeat(np.arange(5), sizes)
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(20000, 5))
    shares = sizes / sizes.sum()
    true = float(np.sum(shares**2))
    cr2 = np.mean([spread(x[clusters], np.ones(len(clusters)), clusters).stderr ** 2
                   for x in draws[:4000]])  # fmt: skip
    assert cr2 == pytest.approx(true, rel=0.05)
    # And the degrees of freedom are those of about one problem, not G - 1 = 4.
    assert spread(draws[0][clusters], np.ones(len(clusters)), clusters).degrees_of_freedom < 2
