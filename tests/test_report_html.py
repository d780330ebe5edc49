"""The report's HTML page in headless Chromium: its tables and plots are there, and it loads
nothing. Two screenshots go to the artifacts folder (`$HEVAL_ARTIFACTS`, default `artifacts/`):
the top of the page (runs and results) and the plots of failure kinds and paired differences.
"""

import pytest

from heval_inspect.report import build_report
from heval_inspect.report.render import write_all

from .conftest import CHROMIUM
from .test_viewer import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.docker]

TABLES = ("runs", "results", "differences", "failures", "gaps")
RESULTS = ("results-humaneval", "results-humaneval_infilling")
PLOTS = ("pass1", "passk", "failures", "differences")


@pytest.fixture(scope="module")
def page_file(report_logs, tmp_path_factory):
    """The report of the two HumanEval "models" and the infilling run (for the gap tables)."""
    report = build_report(
        [report_logs["canonical"], report_logs["mutant"], report_logs["infilling"]],
        baseline="canonical",
    )
    return write_all(report, tmp_path_factory.mktemp("report"))["html"]


def test_the_page_shows_every_table_and_plot_and_loads_nothing(page_file):
    from playwright.sync_api import sync_playwright

    url = page_file.resolve().as_uri()
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("request", lambda request: requests.append(request.url))
        page.route(
            "**/*",
            lambda route: route.continue_() if route.request.url == url else route.abort(),
        )
        page.goto(url)
        page.wait_for_load_state("networkidle")
        for name in TABLES:
            table = page.locator(f"table#table-{name} tbody tr")
            if name == "results":  # one table per task
                table = page.locator("table[id^=table-results-] tbody tr")
            assert table.count() > 0, name
        for name in PLOTS:
            plot = page.locator(f"figure#plot-{name} svg")
            assert plot.count() == 1, name
            box = plot.bounding_box()
            assert box and box["width"] > 200 and box["height"] > 100, (name, box)
            # Drawn: paths (bars, points, lettering), not an empty frame.
            assert plot.locator("path").count() > 20, name
        for name in RESULTS:
            assert page.locator(f"table#table-{name} tbody tr").count() > 0, name
        text = page.locator("body").inner_text()
        assert "mutant (humaneval 2-B)" in text and "canonical (humaneval 2-B)" in text
        assert "wrong answer" in text and "starts and ends mid-line" in text
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        top = ARTIFACTS / "report-tables.png"
        page.screenshot(path=str(top))
        page.locator("figure#plot-differences").evaluate("plot => plot.scrollIntoView()")
        plots = ARTIFACTS / "report-plots.png"
        page.screenshot(path=str(plots))
        browser.close()
    assert requests == [url], requests
    assert top.stat().st_size > 10_000 and plots.stat().st_size > 10_000
