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

    python benchmarks/interval_coverage.py                   # 1000 reps a cell: about 30 minutes
    python benchmarks/interval_coverage.py --reps 200 --problems 5,10 --out coverage.md

With R replications a cell's Monte-Carlo SE is sqrt(0.95 x 0.05 / R): 0.7 points at 1000.
"""

import argparse
import hashlib
import math
import multiprocessing
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import stats
from scipy.special import expit

from heval_inspect.data import SUBSETS, load_official
from heval_inspect.metrics import pass_at_k
from heval_inspect.report import intervals
from heval_inspect.tasks import problem_id

TARGET = 93.0  # the floor for coverage, up to Monte-Carlo error
RATES = (0.05, 0.2, 0.5, 0.8, 0.95)
BLENDS = ("sample_weighted", "mean_of_subsets", "problem_macro")
GROUPS = (*SUBSETS, *BLENDS)
EXACT_SHARE = 0.5  # of passing epochs that also match exactly
DIFFICULTY_SD, TASK_SD, RUN_SD, DELTA = 2.5, 1.0, 0.5, 0.5
NODES = 120  # Gauss-Hermite nodes


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


def choose(cell: Cell, rng) -> np.ndarray:
    if cell.order == "first":
        return np.arange(cell.problems)
    return np.sort(rng.choice(164, cell.problems, replace=False))


def layout(cell: Cell, chosen: np.ndarray):
    """Per subset: each task's problem (0..G-1), with the subset's real number of tasks each."""
    return {s: np.repeat(np.arange(len(chosen)), cell.sizes[s][chosen]) for s in SUBSETS}


def group_rows(problem_of: dict[str, np.ndarray]):
    """Per group: the indices into the concatenation of the subsets, and the weights."""
    offsets, start = {}, 0
    for s in SUBSETS:
        offsets[s] = (start, start + len(problem_of[s]))
        start += len(problem_of[s])
    everything = np.concatenate([problem_of[s] for s in SUBSETS])
    subset = np.concatenate([np.full(len(problem_of[s]), i) for i, s in enumerate(SUBSETS)])
    rows = {s: (np.arange(*offsets[s]), np.ones(offsets[s][1] - offsets[s][0])) for s in SUBSETS}
    every = np.arange(len(everything))
    rows["sample_weighted"] = (every, np.ones(len(every)))
    rows["mean_of_subsets"] = (every, 1 / np.bincount(subset)[subset])
    rows["problem_macro"] = (every, 1 / np.bincount(everything)[everything])
    return everything, rows


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


def rate_cell(cell: Cell) -> dict[tuple[str, str], Tally]:
    rng = np.random.default_rng(cell.seed)
    truth = {"pass@1": cell.rate, "exact_match": EXACT_SHARE * cell.rate}
    truth["pass@3"] = pass_at_3_truth(cell.rate, cell.phi, cell.psi)
    tallies = {(g, f): Tally() for g in GROUPS for f in figures_of(cell.epochs)}
    table3 = np.array([pass_at_k(cell.epochs, c, 3) for c in range(cell.epochs + 1)]) if (
        cell.epochs >= 3
    ) else None  # fmt: skip
    for _ in range(cell.reps):
        chosen = choose(cell, rng)
        everything, rows = group_rows(layout(cell, chosen))
        own = rng.beta(cell.rate * cell.phi, (1 - cell.rate) * cell.phi, cell.problems)
        own = np.clip(own, 1e-12, 1 - 1e-12)  # Beta draws of 0 or 1 give NaN below
        task = rng.beta(own[everything] * cell.psi, (1 - own[everything]) * cell.psi)
        passed = rng.binomial(cell.epochs, task)
        matched = rng.binomial(passed, EXACT_SHARE)
        values = {"pass@1": passed / cell.epochs, "exact_match": matched / cell.epochs}
        if table3 is not None:
            values["pass@3"] = table3[passed]
        for group, (index, weights) in rows.items():
            clusters = everything[index]
            for figure, per_task in values.items():
                trials = np.full(len(index), cell.epochs / (3 if figure == "pass@3" else 1))
                x, tally, true = per_task[index], tallies[group, figure], truth[figure]
                old = old_rate_interval(old_spread(x, weights, clusters, trials))
                new = intervals.rate_interval(intervals.spread(x, weights, clusters, trials))
                if new is None or not 0 <= new[0] < new[1] <= 1:
                    raise RuntimeError(f"{cell} {group} {figure}: new interval {new}")
                tally.old += old[0] <= true <= old[1]
                tally.new += new[0] <= true <= new[1]
                tally.old_outside += not 0 <= old[0] < old[1] <= 1
                tally.old_width += old[1] - old[0]
                tally.new_width += new[1] - new[0]
    return tallies


def population_rate(mu: float) -> float:
    nodes, weights = hermegauss(NODES)
    scale = math.sqrt(DIFFICULTY_SD**2 + TASK_SD**2 + RUN_SD**2)
    return float(weights @ expit(mu + scale * nodes)) / math.sqrt(2 * math.pi)


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
    for _ in range(cell.reps):
        chosen = choose(cell, rng)
        everything, rows = group_rows(layout(cell, chosen))
        shared = rng.normal(0, DIFFICULTY_SD, cell.problems)[everything]
        shared += rng.normal(0, TASK_SD, len(everything))
        run_a = rng.normal(0, RUN_SD, cell.problems)[everything]
        run_b = rng.normal(0, RUN_SD, cell.problems)[everything]
        a = (rng.random(len(everything)) < expit(mu + shared + run_a)).astype(float)
        b = (rng.random(len(everything)) < expit(mu + cell.delta + shared + run_b)).astype(float)
        for group, (index, weights) in rows.items():
            clusters, tally = everything[index], tallies[group, "pass@1"]
            xa, xb = a[index], b[index]
            o_a, o_b = old_spread(xa, weights, clusters), old_spread(xb, weights, clusters)
            o_d = old_spread(xb - xa, weights, clusters)
            old = old_difference_interval(o_d, o_a, o_b)
            n_a, n_b = (intervals.spread(x, weights, clusters) for x in (xa, xb))
            n_d = intervals.spread(xb - xa, weights, clusters)
            new = intervals.difference_interval(n_d, n_a, n_b)
            p = intervals.p_value(n_d, n_a, n_b)
            if new is None or not -1 <= new[0] < new[1] <= 1 or p is None:
                raise RuntimeError(f"{cell} {group}: new interval {new}, p {p}")
            if (p < 0.05) != (not new[0] <= 0 <= new[1]) and abs(p - 0.05) > 1e-9:
                raise RuntimeError(f"{cell} {group}: p {p} disagrees with {new}")
            tally.old += old[0] <= truth <= old[1]
            tally.new += new[0] <= truth <= new[1]
            tally.old_outside += not -1 <= old[0] < old[1] <= 1
            old_p = old_p_value(o_d)
            tally.old_no_p += old_p is None and not old[0] <= 0 <= old[1]
            tally.old_reject += old_p is not None and old_p < 0.05
            tally.new_reject += p < 0.05
            tally.old_width += old[1] - old[0]
            tally.new_width += new[1] - new[0]
    return tallies


def run_cell(cell: Cell):
    return cell, (rate_cell(cell) if cell.kind == "rate" else difference_cell(cell))


def cells(args, sizes) -> list[Cell]:
    out = []
    for g, problems in enumerate(args.problems):
        for o, order in enumerate(("first", "random") if problems < 164 else ("first",)):
            for r, rate in enumerate(RATES):
                for epochs in (1, 5):
                    seed = (args.seed, 0, g, o, r, epochs)
                    out.append(
                        Cell("rate", problems, order, rate, epochs, 0.0, args.reps, seed,
                             sizes, args.problem_phi, args.task_psi)
                    )  # fmt: skip
                for d, delta in enumerate((0.0, DELTA)):
                    seed = (args.seed, 1, g, o, r, d)
                    out.append(
                        Cell("difference", problems, order, rate, 1, delta, args.reps, seed, sizes)
                    )
    return out


# ---- the tables -----------------------------------------------------------------------------


def coverage_table(results, kind, group, figure, epochs, delta, problems) -> str:
    """Rows: G and order; columns: the rates; cells: old / new coverage, %."""
    head = "| G | " + " | ".join(f"{r:.2f}" for r in RATES) + " |"
    lines = [head, "|--:|" + "--:|" * len(RATES)]
    for g in problems:
        for order in ("first", "random") if g < 164 else ("first",):
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


def summaries(results) -> str:
    lines = []
    for kind in ("rate", "difference"):
        outcomes = [o for o in every_outcome(results) if o[0].kind == kind]
        cover = [
            (100 * t.old / c.reps, 100 * t.new / c.reps, c, g, f, t) for c, g, f, t in outcomes
        ]
        worst_old = min(cover, key=lambda x: x[0])
        worst_new = min(cover, key=lambda x: x[1])
        below_old = sum(x[0] < TARGET for x in cover)
        below_new = sum(x[1] < TARGET for x in cover)
        reps = cover[0][2].reps
        width_ratio = sum(x[5].new_width for x in cover) / sum(x[5].old_width for x in cover)
        lines += [
            f"- {kind}s: {len(cover)} cells (group x figure x G x order x rate), {reps} reps each",
            f"  - below {TARGET}%: old {below_old}, new {below_new}",
            (
                f"  - worst old: {worst_old[0]:.1f} ({name(*worst_old[2:5])}; new there "
                f"{worst_old[1]:.1f})"
            ),
            (
                f"  - worst new: {worst_new[1]:.1f} ({name(*worst_new[2:5])}; old there "
                f"{worst_new[0]:.1f})"
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
                    f"  - type I error (p < 0.05 under the null), new: mean "
                    f"{np.mean([r for r, _ in rejects]):.2f}%, highest {top:.1f} "
                    f"({name(*top_x[2:5])}); old: mean "
                    f"{np.mean([r for r, _ in old_rejects]):.2f}%, highest "
                    f"{max(r for r, _ in old_rejects):.1f}"
                ),
                (
                    "  - old p-value n/a with an interval that excludes 0: "
                    f"{sum(x[5].old_no_p for x in cover)} replications; new: never"
                ),
            ]
    return "\n".join(lines)


def null_table(results, group, problems) -> str:
    head = "| G | " + " | ".join(f"{r:.2f}" for r in RATES) + " |"
    lines = [head, "|--:|" + "--:|" * len(RATES)]
    for g in problems:
        for order in ("first", "random") if g < 164 else ("first",):
            row = []
            for rate in RATES:
                cell, tallies = results["difference", g, order, rate, 1, 0.0]
                t = tallies[group, "pass@1"]
                row.append(
                    f"{100 * t.old_reject / cell.reps:.1f} / {100 * t.new_reject / cell.reps:.1f}"
                )
            lines.append(f"| {g} {order} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def report(results, problems) -> str:
    parts = ["### Summary", "", summaries(results), ""]
    for group in dict.fromkeys(("multi_line", "sample_weighted", *GROUPS)):
        parts += [
            f"### {group}",
            "",
            "pass@1, one epoch: coverage of the true rate, % (old / new); columns the rate:",
            "",
            coverage_table(results, "rate", group, "pass@1", 1, 0.0, problems),
            "",
            "Paired difference in pass@1 (delta 0.5): coverage, % (old / new); "
            "columns run A's rate:",
            "",
            coverage_table(results, "difference", group, "pass@1", 1, DELTA, problems),
            "",
            "Null (delta 0): p < 0.05, % (old / new):",
            "",
            null_table(results, group, problems),
            "",
        ]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000, help="replications per cell")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--problems", default="5,10,20,40,164", help="the G to run, e.g. 5,10")
    parser.add_argument("--problem-phi", type=float, default=0.3)
    parser.add_argument("--task-psi", type=float, default=20.0)
    parser.add_argument("--out", help="also write the tables as Markdown to this file")
    args = parser.parse_args()
    args.problems = [int(g) for g in args.problems.split(",")]
    started = time.monotonic()
    version = hashlib.sha256(Path(intervals.__file__).read_bytes()).hexdigest()[:12]
    todo = cells(args, real_sizes())
    parameters = (
        f"intervals.py sha256 {version}; reps {args.reps} per cell, seed {args.seed}, "
        f"{args.workers} processes; G {args.problems}; rates {RATES}; problems' phi "
        f"{args.problem_phi}, tasks' psi {args.task_psi}; differences: difficulty SD "
        f"{DIFFICULTY_SD}, task SD {TASK_SD}, run SD {RUN_SD}, delta 0 and {DELTA}"
    )
    print(parameters, flush=True)
    ordered = sorted(todo, key=lambda c: c.problems, reverse=True)
    with multiprocessing.Pool(args.workers) as pool:
        done = pool.map(run_cell, ordered, chunksize=1)
    results = {(c.kind, c.problems, c.order, c.rate, c.epochs, c.delta): (c, t) for c, t in done}
    text = report(results, args.problems)
    print(text)
    if args.out:
        Path(args.out).write_text(f"# Coverage of 95% intervals\n\n{parameters}\n\n{text}")
    print(f"wall time {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
