"""`heval-inspect report` on figures at 0 or 1, exactly or within float error: every view is
written, and every interval and error bar stays inside its range and around its figure.

The runs are real (`tests/report_logs.edge_logs`): every task passing in two merged shards (the
`heval-inspect parallel --shards 2 ... --limit 10` run whose report crashed drawing an error bar
below 0), every task failing, and a single sample.
"""

import csv
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from heval_inspect.report import build_report, plots
from heval_inspect.report.intervals import difference_interval, rate_interval, spread
from heval_inspect.report.page import html_page
from heval_inspect.report.render import markdown
from heval_inspect.report.stats import Figure
from heval_inspect.report.terminal import terminal

from .report_logs import EDGE_FAILING, EDGE_SHARD_LIMIT, edge_logs

BIN = Path(sys.executable).parent
OUTPUTS = {"report.md", "report.html", "results.csv", "differences.csv", "failures.csv",
           "gaps.csv"}  # fmt: skip
# Figures at and within float error of the ends of [0, 1].
EDGES = (0.0, 1e-16, 5e-17, 1 - 1e-16, 1 - 2.2e-16, 1.0)


@pytest.fixture(scope="module")
def edge(tmp_path_factory) -> dict[str, list[str]]:
    return edge_logs(tmp_path_factory.mktemp("edge-logs"))


def _report(logs: list[str], out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "heval-inspect"), "report", *logs, "--out", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def _bounded(rows: list[dict], value: str, floor: float) -> None:
    """Each row's interval (if it has one) inside [floor, 1] and around its figure."""
    for row in rows:
        if row["ci95_low"] in ("", "nan"):
            continue
        low, figure, high = (float(row[key]) for key in ("ci95_low", value, "ci95_high"))
        assert floor <= low <= figure <= high <= 1 and low < high, row


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize(
    "runs", [["all pass, 2 shards"], ["all fail"], ["one sample"], ["all pass, 2 shards",
             "all fail"]], ids=" + ".join,
)  # fmt: skip
def test_a_report_of_figures_at_0_or_1_writes_every_view(edge, tmp_path, runs):
    out = tmp_path / "out"
    run = _report([log for name in runs for log in edge[name]], out)
    assert run.returncode == 0, run.stderr
    assert {path.name for path in out.iterdir()} == OUTPUTS
    page = (out / "report.html").read_text(encoding="utf-8")
    # pass@1, failures, differences; no pass@k against k: each run has one k
    assert page.count("<svg") == 2 + (len(runs) > 1)
    results = _rows(out / "results.csv")
    _bounded(results, "value", 0.0)
    _bounded(_rows(out / "differences.csv"), "difference", -1.0)
    pass1 = {row["run"].split(" (")[0]: row for row in results if row["figure"] == "pass@1"}
    for name in runs:
        row = pass1["garbage" if name == "all fail" else "reference"]
        if name == "one sample":  # one problem: no interval, and no error bar
            assert (float(row["value"]), row["ci95_low"]) == (1.0, "nan")
        elif name == "all fail":  # the interval's low end is the figure itself, 0
            assert (float(row["value"]), float(row["ci95_low"])) == (0.0, 0.0)
            assert int(row["tasks"]) == EDGE_FAILING
        else:  # its high end is the figure itself, 1
            assert (float(row["value"]), float(row["ci95_high"])) == (1.0, 1.0)
            assert int(row["tasks"]) == 2 * EDGE_SHARD_LIMIT
    assert "-0.000" not in run.stdout + (out / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("figure", EDGES)
@pytest.mark.parametrize("epochs", [1, 3])
def test_a_rate_at_or_near_0_or_1_has_an_interval_inside_0_1_around_it(figure, epochs):
    # Tasks counts at which Wilson's ends, computed, missed 0 or 1 by float error (18, 20, 23,
    # 49 problems at 1; 3, 9, 29 at 0), and others.
    for problems in range(2, 120):
        values = np.full(problems * 2, figure)  # two tasks per problem
        s = spread(values, np.ones(len(values)), np.repeat(np.arange(problems), 2),
                   np.full(len(values), epochs))  # fmt: skip
        low, high = rate_interval(s)
        assert 0 <= low <= s.value <= high <= 1 and low < high, (problems, s.value, low, high)
        if s.value in (0.0, 1.0):
            assert (low, high)[int(s.value)] == s.value
        # A figure within float error of an end is that end, with no spread.
        assert s.value == round(figure) and s.stderr == 0


@pytest.mark.parametrize("figure", EDGES)
def test_a_figure_and_interval_apart_by_float_error_are_drawn_and_printed_within_0_1(figure):
    # The metric's figure and the interval's ends are computed apart: a figure of 1 beside an
    # end of 1 - 1e-16 (or the reverse) is still inside its interval, and both inside [0, 1].
    for low, high in ((figure - 1e-16, figure + 1e-16), (0.0, 1 - 1e-16), (1e-16, 1.0)):
        f = Figure(figure, 0.0, (low, high))
        assert 0 <= f.low <= f.value <= f.high <= 1, (figure, low, high, f)
        below, above = plots._errors([f])
        assert below[0] >= 0 and above[0] >= 0


def test_a_difference_interval_stays_inside_minus_1_1():
    # Every task passes in one run and fails in the other: D = -1 exactly, with no spread.
    for problems in (3, 9, 20, 49):
        ones, zeros = np.ones(problems), np.zeros(problems)
        clusters = np.arange(problems)
        a, b = spread(ones, ones, clusters), spread(zeros, ones, clusters)
        d = spread(zeros - ones, ones, clusters)
        low, high = difference_interval(d, a, b)
        assert -1 <= low <= d.value <= high <= 1 and low < high and d.value == -1


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("error", [-2.2e-16, -1e-16, 5e-17, 2.2e-16])
def test_every_view_draws_figures_within_float_error_of_0_and_1(edge, error, capsys):
    # Every run's figures are 1 (all pass) or 0 (all fail): each moved by float error.
    report = build_report([*edge["all pass, 2 shards"], *edge["all fail"]])

    def nudged(f: Figure) -> Figure:
        return replace(f, value=f.value + error)

    for result in report.results:
        result.groups = {g: {n: nudged(f) for n, f in named.items()}
                         for g, named in result.groups.items()}  # fmt: skip
        result.pass_at = {k: nudged(f) for k, f in result.pass_at.items()}
    page = html_page(report)
    assert page.count("<svg") == 3  # pass@1, failures, differences (one k: no pass@k against k)
    text = markdown(report)
    terminal(report)
    printed = capsys.readouterr().out
    for shown in ("0.000 [0.000, ", "1.000 [0.8"):
        assert shown in text and shown in printed
    assert "-0.000" not in text + printed
    for result in report.results:
        for f in [*result.pass_at.values(), *(f for n in result.groups.values()
                                               for f in n.values())]:  # fmt: skip
            assert 0 <= f.low <= f.value <= f.high <= 1
