"""The report's HTML page in headless Chromium: its tables and plots are there, it fits a window
1,280 px wide without scrolling sideways, and it loads nothing. Two screenshots go to the
artifacts folder (`$HEVAL_ARTIFACTS`, default `artifacts/`): the top of the page (runs and
results) and the plots of failure kinds and paired differences.
"""

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from heval_inspect.report import build_report
from heval_inspect.report.render import write_all

from .conftest import CHROMIUM
from .test_viewer import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.data, pytest.mark.slow]

TABLES = ("runs", "results", "differences", "failures", "gaps")
WIDTH = 1280
PLOTS = ("pass1", "passk", "failures", "differences")


@pytest.fixture(scope="module")
def page_file(report_logs, tmp_path_factory):
    """The report of the two HumanEval "models", a twin of the first (a run with the same
    figures, which the plots must not hide) and the infilling run (for the gap tables)."""
    folder = tmp_path_factory.mktemp("report")
    log = read_eval_log(report_logs["canonical"])
    log.eval.metadata["label"] = "twin"
    write_eval_log(log, str(folder / "twin.eval"))
    report = build_report(
        [report_logs["canonical"], str(folder / "twin.eval"), report_logs["mutant"],
         report_logs["infilling"]],
        baseline="canonical",
    )  # fmt: skip
    return write_all(report, folder)["html"]


def test_the_page_shows_every_table_and_plot_and_loads_nothing(page_file):
    from playwright.sync_api import sync_playwright

    url = page_file.resolve().as_uri()
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": WIDTH, "height": 900})
        page.on("request", lambda request: requests.append(request.url))
        page.route(
            "**/*",
            lambda route: route.continue_() if route.request.url == url else route.abort(),
        )
        page.goto(url)
        page.wait_for_load_state("networkidle")
        for name in TABLES:  # a section of several tables numbers them: table-results-1, ...
            rows = page.locator(f"table#table-{name} tbody tr, table[id^=table-{name}-] tbody tr")
            assert rows.count() > 0, name
        # One results table per task and subset or blend: each run once in each.
        results = page.locator("table[id^=table-results-]")
        assert results.count() == 1 + 7  # humaneval; the infilling run's 4 subsets and 3 blends
        assert results.first.locator("tbody tr").count() == 3  # canonical, twin, mutant
        for index in range(results.count()):
            runs = results.nth(index).locator("tbody tr td:first-child").all_inner_texts()
            assert len(runs) == len(set(runs)), runs
        # Nothing wider than the window: no table or plot to scroll sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
        for element in page.locator("table, figure svg").all():
            box = element.bounding_box()
            assert box["x"] + box["width"] <= WIDTH, box
        for name in PLOTS:
            plot = page.locator(f"figure#plot-{name} svg")
            assert plot.count() == 1, name
            box = plot.bounding_box()
            assert box and box["width"] > 200 and box["height"] > 100, (name, box)
            # Drawn: paths (bars, points, lettering), not an empty frame.
            assert plot.locator("path").count() > 20, name
        text = page.locator("body").inner_text()
        assert "mutant (humaneval 4-A)" in text and "twin (humaneval 4-A)" in text
        assert "wrong answer" in text and "starts and ends mid-line" in text
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        top = ARTIFACTS / "report-tables.png"
        page.screenshot(path=str(top))
        page.locator("figure#plot-pass1").evaluate("plot => plot.scrollIntoView()")
        rates = ARTIFACTS / "report-rate-plots.png"
        page.screenshot(path=str(rates))
        page.locator("figure#plot-differences").evaluate("plot => plot.scrollIntoView()")
        plots = ARTIFACTS / "report-plots.png"
        page.screenshot(path=str(plots))
        browser.close()
    assert requests == [url], requests
    assert all(shot.stat().st_size > 10_000 for shot in (top, rates, plots))
