"""Which cap on a rate's effective number of trials keeps 95% coverage: the candidates side by side.

A rate's interval (`heval_inspect.report.intervals.rate_interval`) is Wilson's on
n_eff = p (1 - p) / SE^2, kept between the effective number of problems G and a cap. This script
draws the rate cells of `interval_coverage.py` (the same shapes, rates, epochs and seeds: a cell
here draws the same runs as there at the same --reps) and computes, on each run, the interval
under each cap:

- `trials`: tasks x epochs (epochs / k for pass@k), the cap before issue 38;
- `tasks`: the tasks, epochs not counted;
- `epochs' deff`: trials / (1 + (E - 1) rho), rho the intraclass correlation of a task's epochs
  (one-way ANOVA, from each task's share of E epochs; pass@1 and exact match only);
- `G^2 / 2`, `G^2` and `2 G^2`: the smaller of the trials and that many (`G^2` is the package's).

Each on Wilson's interval alone, as the caps were weighed (docs/benchmarks.md): the package's
end towards the nearer of 0 and 1 now reaches as far as Jeffreys' as well, which
`interval_shapes.py` weighs.

For each: how many cells fall below 93% and below the Monte-Carlo floor, the worst cell, and the
mean width against `trials` over all cells and over the cells `trials` already covered at 93%.

    python benchmarks/interval_caps.py --reps 1000 --problems 5,10,20,40 --epochs 5
"""

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import interval_coverage as cov  # a sibling script, not a package

from heval_inspect.metrics import pass_at_k

CAPS = ("trials", "tasks", "epochs' deff", "G^2 / 2", "G^2", "2 G^2")


def wilson(s: cov.Spreads, cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`intervals.rate_interval` of each replication, with n_eff's cap `cap` for the trials'."""
    p = cov.snapped(np.minimum(np.maximum(s.value, 0.0), 1.0))
    inside = (p > 0) & (p < 1) & (s.stderr > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread_n = np.minimum(
            np.maximum(p * (1 - p) / s.stderr**2, s.problems_weighted),
            np.maximum(cap, s.problems_weighted),
        )
    n = np.where(inside, spread_n, s.problems_weighted)
    q2 = cov.t_quantiles(s.degrees_of_freedom) ** 2
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = np.sqrt(q2) / (1 + q2 / n) * np.sqrt(p * (1 - p) / n + q2 / (4 * n * n))
    return cov.bounded(p, centre - half, centre + half)


def epochs_deff_cap(tasks: cov.Tasks, x: np.ndarray, epochs: int, s: cov.Spreads) -> np.ndarray:
    """trials / (1 + (E - 1) rho): rho = 1 - (mean within-task variance) / p (1 - p)."""
    p = cov.snapped(np.minimum(np.maximum(s.value, 0.0), 1.0))
    within = tasks.per_rep(tasks.share * epochs * x * (1 - x) / (epochs - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip(np.where(p * (1 - p) > 0, 1 - within / (p * (1 - p)), 1.0), 0.0, 1.0)
    return 1 / tasks.per_rep(tasks.share**2 * (rho[tasks.rep] + (1 - rho[tasks.rep]) / epochs))


def intervals_of(tasks, x, epochs, figure, s) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    g2 = s.problems_weighted**2
    out = {
        "trials": wilson(s, s.trials_weighted),
        "tasks": wilson(s, s.tasks_weighted),
        "G^2 / 2": wilson(s, np.minimum(s.trials_weighted, g2 / 2)),
        "G^2": wilson(s, np.minimum(s.trials_weighted, g2)),
        "2 G^2": wilson(s, np.minimum(s.trials_weighted, 2 * g2)),
    }
    if epochs > 1 and figure != "pass@3":
        out["epochs' deff"] = wilson(s, epochs_deff_cap(tasks, x, epochs, s))
    return out


def run_cell(cell: cov.Cell) -> tuple[cov.Cell, dict]:
    """Coverage and width of each cap, by group and figure: `rate_cell`'s draws, in its order."""
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
                x = per_task[index]
                s = cov.new_spreads(tasks, x, trials)
                for cap, (low, high) in intervals_of(tasks, x, cell.epochs, figure, s).items():
                    t = truth[figure]
                    tally[group, figure, cap][0] += int(np.sum((low <= t) & (t <= high)))
                    tally[group, figure, cap][1] += float(np.sum(high - low))
    return cell, dict(tally)


def summary(done: list[tuple[cov.Cell, dict]]) -> str:
    reps = done[0][0].reps
    _, _, floor, _ = cov.monte_carlo(reps)
    cells = {}  # (cell, group, figure) -> {cap: (coverage %, mean width)}
    for cell, tally in done:
        for (group, figure, cap), (covered, width) in tally.items():
            key = (cell, group, figure)
            cells.setdefault(key, {})[cap] = (100 * covered / reps, width / reps)
    lines = [f"{reps} reps a cell; Monte-Carlo floor (93% less two SEs) {floor:.1f}%", ""]
    lines += [
        "| cap | cells | below 93% | below the floor | worst | mean width / `trials`'s "
        "(cells `trials` covers) | above 1.5x there |",
        "|---|--:|--:|--:|---|--:|--:|",
    ]
    for cap in CAPS:
        mine = [(key, d[cap], d["trials"]) for key, d in cells.items() if cap in d]
        if not mine:
            continue
        worst_key, (worst, _), _ = min(mine, key=lambda m: m[1][0])
        ratios = np.array([c[1] / b[1] for _, c, b in mine])
        covered = np.array([b[0] >= cov.TARGET for _, _, b in mine])
        lines.append(
            f"| {cap} | {len(mine)} | {sum(c[0] < cov.TARGET for _, c, _ in mine)} | "
            f"{sum(c[0] < floor for _, c, _ in mine)} | {worst:.1f} "
            f"({cov.name(*worst_key)}) | {ratios.mean():.3f} ({ratios[covered].mean():.3f}) | "
            f"{int(np.sum(ratios[covered] > 1.5))} |"
        )
    lines += ["", widths_by_group(cells)]
    return "\n".join(lines)


def widths_by_group(cells: dict) -> str:
    """Mean width under the trials' cap and under G^2 (the package's), by group and G: where the
    cap costs width."""
    pairs: dict = defaultdict(list)
    for (cell, group, _), d in cells.items():
        pairs[group, cell.problems].append((d["trials"][1], d["G^2"][1]))
    sizes = sorted({g for _, g in pairs})
    lines = [
        "Mean width, `trials` → `G^2`:",
        "",
        "| group | " + " | ".join(f"G = {g}" for g in sizes) + " |",
        "|---|" + "--:|" * len(sizes),
    ]
    for group in cov.GROUPS:
        row = [np.mean(pairs[group, g], axis=0) for g in sizes]
        lines.append(f"| {group} | " + " | ".join(f"{a:.2f} → {b:.2f}" for a, b in row) + " |")
    return "\n".join(lines)


def main() -> None:
    cov.run_rate_cells(__doc__.split("\n")[0], run_cell, summary, reps=1000,
                       problems="5,10,20,40", epochs="5")  # fmt: skip


if __name__ == "__main__":
    main()
