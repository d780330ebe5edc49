"""The report's plots, drawn with matplotlib (Agg) as SVG text to put inline in the HTML page.

Text is drawn as paths, so a page needs no font; nothing refers to a file or the network.
"""

import io
import re
from typing import TYPE_CHECKING, Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure as PlotFigure
from matplotlib.ticker import MaxNLocator

from .build import Report
from .failures import KINDS
from .stats import Figure

if TYPE_CHECKING:  # matplotlib's names of its settings, for the annotation only
    from matplotlib.typing import RcKeyType

# pyplot picks its backend when it draws the first figure: Agg, whatever the display.
matplotlib.use("Agg")

KIND_COLOURS = {
    "passed": "#4c9a2a",
    "wrong answer": "#d1495b",
    "syntax error": "#edae49",
    "name error": "#8e6c8a",
    "other runtime error": "#00798c",
    "timed out": "#30638e",
    "memory": "#a05195",
    "killed": "#3d3d3d",
    "no verdict": "#bbbbbb",
}
STYLE: "dict[RcKeyType, Any]" = {
    "svg.fonttype": "path",
    "svg.hashsalt": "heval-inspect",
    "font.size": 9,
}
# Each run its own marker and line style too, so runs with the same figures stay told apart.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINES = ("-", "--", ":", "-.")
HATCHES = ("", "//", "..", "xx", "\\\\", "++")


def all_plots(report: Report) -> dict[str, str]:
    """Every plot the report has data for, by name, as SVG text."""
    with plt.rc_context(STYLE):
        plots = {
            "pass1": pass1_by_group(report),
            "failures": failure_kinds(report),
        }
        # Against k only where a run has more than one k to show.
        if any(len(result.pass_at) > 1 for result in report.results):
            plots["passk"] = pass_at_k(report)
        if report.comparisons:
            plots["differences"] = differences(report)
    return plots


def _errors(figures: list[Figure]) -> np.ndarray:
    """matplotlib's error bars (below, above) of each figure's interval: lengths, never below 0
    (not even by float error); none without an interval."""
    lengths = [[0.0, 0.0] if f.interval is None else [f.value - f.low, f.high - f.value]
               for f in figures]  # fmt: skip
    return np.maximum(np.array(lengths).T.reshape(2, len(figures)), 0.0)


def _svg(figure: PlotFigure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    # Inline in HTML: no XML declaration, no DOCTYPE (which names a DTD by its URL).
    return re.sub(r"^.*?(<svg\b)", r"\1", text, flags=re.DOTALL)


def pass1_by_group(report: Report) -> str:
    """pass@1 of each run in each subset and blend, with its 95% interval."""
    groups = report.groups
    figure, axes = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) + 2), 3.6))
    # In each group, a bar for each run that has it, side by side.
    having = {g: [r for r in report.results if "pass@1" in r.groups.get(g, {})] for g in groups}
    width = 0.8 / max(1, max(len(runs) for runs in having.values()))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for number, result in enumerate(report.results):
        xs, figures = [], []
        for position, group in enumerate(groups):
            if result in having[group]:
                place = having[group].index(result) - (len(having[group]) - 1) / 2
                xs.append(position + place * width)
                figures.append(result.groups[group]["pass@1"])
        axes.bar(
            xs, [f.value for f in figures], width * 0.95, yerr=_errors(figures), capsize=3,
            label=result.run.label, color=colours[number % len(colours)],
            hatch=HATCHES[number % len(HATCHES)], edgecolor="white",
        )  # fmt: skip
    axes.set_xticks(range(len(groups)), [g.replace("_", " ") for g in groups], rotation=20)
    axes.set_ylabel("pass@1 (95% interval)")
    axes.set_ylim(0, 1.05)
    axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes.set_title("pass@1 per subset and blend")
    return _svg(figure)


def pass_at_k(report: Report) -> str:
    """pass@k against k for each run (over all its tasks), with 95% intervals."""
    figure, axes = plt.subplots(figsize=(6.0, 3.6))
    runs = len(report.results)
    for number, result in enumerate(report.results):
        ks = sorted(result.pass_at)
        figures = [result.pass_at[k] for k in ks]
        # Side by side around each k, so that a run identical to another is not hidden behind it.
        shift = 0.25 * (number - (runs - 1) / 2) / max(1, runs - 1)
        axes.errorbar(
            [k + shift for k in ks], [f.value for f in figures], yerr=_errors(figures),
            marker=MARKERS[number % len(MARKERS)], linestyle=LINES[number % len(LINES)],
            capsize=3, label=result.run.label,
        )  # fmt: skip
    axes.set_xlabel("k (samples per task)")
    axes.set_ylabel("pass@k (95% interval)")
    axes.set_ylim(0, 1.05)
    locator = axes.xaxis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # a new axis's (AutoLocator) is one
        locator.set_params(integer=True)
    axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes.set_title("pass@k against k (all tasks of each run)")
    return _svg(figure)


def failure_kinds(report: Report) -> str:
    """The share of each kind of verdict, per run and subset, as stacked bars."""
    rows = report.failures
    figure, axes = plt.subplots(figsize=(7.5, 0.35 * len(rows) + 1.6))
    labels = [f"{row.run} | {row.subset}" for row in rows]
    left = np.zeros(len(rows))
    for kind in KINDS:
        shares = np.array([row.counts[kind] / max(1, row.total) for row in rows])
        if shares.any():
            axes.barh(labels, shares, left=left, color=KIND_COLOURS[kind], label=kind)
            left += shares
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of samples")
    axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes.set_title("verdicts by kind")
    return _svg(figure)


def differences(report: Report) -> str:
    """Each paired difference in pass@1 (other minus baseline) with its 95% interval."""
    items = [
        (f"{c.short_title} | {d.group}", d)
        for c in report.comparisons
        for d in c.differences
        if d.figure == "pass@1"
    ]
    figure, axes = plt.subplots(figsize=(7.5, 0.35 * len(items) + 1.4))
    ys = np.arange(len(items))
    values = np.array([d.difference for _, d in items])
    errors = np.array([[d.difference - d.low, d.high - d.difference] for _, d in items]).T
    errors = np.maximum(np.nan_to_num(errors.reshape(2, len(items))), 0.0)  # lengths, as above
    axes.errorbar(values, ys, xerr=errors, fmt="o", capsize=3, color="#30638e")
    axes.axvline(0, color="#888888", linewidth=1)
    axes.set_yticks(ys, [label for label, _ in items])
    axes.invert_yaxis()
    axes.set_xlabel("difference in pass@1 (95% interval, paired, clustered by problem)")
    axes.set_title("paired differences")
    return _svg(figure)
