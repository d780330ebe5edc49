"""Which shape of a rate's interval keeps 95% coverage near 0 and 1: the candidates side by side.

A rate's interval (`heval_inspect.report.intervals.rate_interval`) is built on n_eff (the
effective number of trials, see there) and Student's t quantile q on the spread's degrees of
freedom. This script draws the rate cells of `interval_coverage.py` (the same shapes, rates,
epochs and seeds: a cell here draws the same runs as there at the same --reps) and computes, on
each run, the interval of each shape on that n_eff and q:

- `wilson`: Wilson's score interval with q for z (the interval before this comparison);
- `jeffreys`: Jeffreys' interval, the 2.5% and 97.5% points of Beta(x + 1/2, n - x + 1/2), on
  Korn and Graubard's (1998) degrees-of-freedom-adjusted n = n_eff (z / q)^2, x = p n;
- `clopper-pearson`: Clopper and Pearson's, Beta(x, n - x + 1) and Beta(x + 1, n - x), on the
  same n (Korn and Graubard's own interval);
- `wilson+jeffreys`, `wilson+clopper-pearson`: Wilson's, but for the end towards the nearer of
  0 and 1 (the lower end below 1/2, the upper above), the farther from the figure of Wilson's
  and the other's there (`wilson+jeffreys` is the package's: its interval is
  `interval_coverage.new_rate_intervals`, the others are recomputed here);
- `wilson+jeffreys, both ends`: each end the farther of Wilson's and Jeffreys'.

With one task per problem and one epoch the figure is a binomial count of G (n_eff = G,
q = t_{G-1}), and Wilson's lower end at 2 or 3 successes (upper at 2 or 3 failures) lies above
rates that give that many with more than 2.5% chance: its misses near 0 and 1 are all on one side.

    python benchmarks/interval_shapes.py --reps 2000 --problems 5,10,20,40,164 --epochs 1,5
"""

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
import interval_coverage as cov  # a sibling script, not a package

from heval_inspect.metrics import pass_at_k

SHAPES = (
    "wilson", "jeffreys", "clopper-pearson", "wilson+jeffreys", "wilson+jeffreys, both ends",
    "wilson+clopper-pearson",
)  # fmt: skip
Z = float(stats.norm.ppf(0.975))


def basis(s: cov.Spreads) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each replication's p, n_eff and t quantile, as `intervals.rate_interval` has them."""
    p = cov.snapped(np.minimum(np.maximum(s.value, 0.0), 1.0))
    inside = (p > 0) & (p < 1) & (s.stderr > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread_n = np.minimum(
            np.maximum(p * (1 - p) / s.stderr**2, s.problems_weighted),
            np.minimum(s.trials_weighted, s.problems_weighted**2),
        )
    return p, np.where(inside, spread_n, s.problems_weighted), cov.t_quantiles(s.degrees_of_freedom)


def wilson(p, n, q):
    q2 = q * q
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = q / (1 + q2 / n) * np.sqrt(p * (1 - p) / n + q2 / (4 * n * n))
    return centre - half, centre + half


def beta_ends(p, n, q, prior_low, prior_high):
    """Beta(x + a, n - x + b) quantiles on n = n_eff (z / q)^2: (a, b) = prior_low for the lower
    end and prior_high for the upper end; 0 at p = 0 and 1 at p = 1."""
    m = n * (Z / q) ** 2
    x = p * m
    with np.errstate(divide="ignore", invalid="ignore"):
        low = stats.beta.ppf(0.025, x + prior_low[0], m - x + prior_low[1])
        high = stats.beta.ppf(0.975, x + prior_high[0], m - x + prior_high[1])
    return np.where(p > 0, low, 0.0), np.where(p < 1, high, 1.0)


def shapes_of(s: cov.Spreads) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    p, n, q = basis(s)
    w = wilson(p, n, q)
    j = beta_ends(p, n, q, (0.5, 0.5), (0.5, 0.5))
    c = beta_ends(p, n, q, (0.0, 1.0), (1.0, 0.0))
    out = {"wilson": w, "jeffreys": j, "clopper-pearson": c}
    out["wilson+jeffreys, both ends"] = (np.minimum(w[0], j[0]), np.maximum(w[1], j[1]))
    out["wilson+clopper-pearson"] = (
        np.where(p < 0.5, np.minimum(w[0], c[0]), w[0]),
        np.where(p > 0.5, np.maximum(w[1], c[1]), w[1]),
    )
    out = {k: cov.bounded(p, *v) for k, v in out.items()}
    out["wilson+jeffreys"] = cov.new_rate_intervals(s)
    return out


def run_cell(cell: cov.Cell) -> tuple[cov.Cell, dict]:
    """Coverage and width of each shape, by group and figure: `rate_cell`'s draws, in its order."""
    rng = np.random.default_rng(cell.seed)
    truth = {"pass@1": cell.rate, "exact_match": cov.EXACT_SHARE * cell.rate}
    truth["pass@3"] = cov.pass_at_3_truth(cell.rate, cell.phi, cell.psi)
    table3 = np.array([pass_at_k(cell.epochs, c, 3) for c in range(cell.epochs + 1)]) if (
        cell.epochs >= 3
    ) else None  # fmt: skip
    tally: dict = defaultdict(lambda: [0, 0.0])
    for reps in cov.chunks(cell):
        everything, groups = cov.layout(cell, cov.choose(cell, reps, rng))
        own = rng.beta(cell.rate * cell.phi, (1 - cell.rate) * cell.phi, reps * cell.problems)
        own = np.clip(own, 1e-12, 1 - 1e-12)
        task = rng.beta(own[everything] * cell.psi, (1 - own[everything]) * cell.psi)
        passed = rng.binomial(cell.epochs, task)
        matched = rng.binomial(passed, cov.EXACT_SHARE)
        values = {"pass@1": passed / cell.epochs, "exact_match": matched / cell.epochs}
        if table3 is not None:
            values["pass@3"] = table3[passed]
        for group, (index, tasks) in groups.items():
            for figure, per_task in values.items():
                trials = cell.epochs / (3 if figure == "pass@3" else 1)
                s = cov.new_spreads(tasks, per_task[index], trials)
                t = truth[figure]
                for shape, (low, high) in shapes_of(s).items():
                    tally[group, figure, shape][0] += int(np.sum((low <= t) & (t <= high)))
                    tally[group, figure, shape][1] += float(np.sum(high - low))
    return cell, dict(tally)


def summary(done: list[tuple[cov.Cell, dict]]) -> str:
    reps = done[0][0].reps
    _, _, floor, _ = cov.monte_carlo(reps)
    cells = {}  # (cell, group, figure) -> {shape: (coverage %, mean width)}
    for cell, tally in done:
        for (group, figure, shape), (covered, width) in tally.items():
            key = (cell, group, figure)
            cells.setdefault(key, {})[shape] = (100 * covered / reps, width / reps)
    lines = [f"{reps} reps a cell; Monte-Carlo floor (93% less two SEs) {floor:.1f}%", ""]
    lines += [
        "| shape | cells | below 93% | below the floor | worst | mean width / `wilson`'s "
        "(cells `wilson` covers) | most there |",
        "|---|--:|--:|--:|---|--:|--:|",
    ]
    for shape in SHAPES:
        mine = [(key, d[shape], d["wilson"]) for key, d in cells.items()]
        worst_key, (worst, _), _ = min(mine, key=lambda m: m[1][0])
        ratios = np.array([c[1] / b[1] for _, c, b in mine])
        covered = np.array([b[0] >= cov.TARGET for _, _, b in mine])
        lines.append(
            f"| {shape} | {len(mine)} | {sum(c[0] < cov.TARGET for _, c, _ in mine)} | "
            f"{sum(c[0] < floor for _, c, _ in mine)} | {worst:.1f} "
            f"({cov.name(*worst_key)}) | {ratios.mean():.3f} ({ratios[covered].mean():.3f}) | "
            f"{ratios[covered].max():.3f} |"
        )
    short = sorted(
        (d["wilson"][0], key, d) for key, d in cells.items() if d["wilson"][0] < cov.TARGET
    )
    lines += ["", "Cells `wilson` leaves below 93%, coverage by shape, %:", ""]
    lines += ["| cell | " + " | ".join(SHAPES) + " |", "|---|" + "--:|" * len(SHAPES)]
    for _, key, d in short:
        lines.append(f"| {cov.name(*key)} | " + " | ".join(f"{d[s][0]:.1f}" for s in SHAPES) + " |")
    return "\n".join(lines)


def main() -> None:
    cov.run_rate_cells(__doc__.split("\n")[0], run_cell, summary, reps=2000,
                       problems="5,10,20,40,164", epochs="1,5")  # fmt: skip


if __name__ == "__main__":
    main()
