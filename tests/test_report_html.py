"""The report's HTML page in headless Chromium: its tables and plots are there, it loads nothing,
and it fits a laptop's window (1,366 px) and a phone's (390 px): nothing runs past the page's
right edge but inside a table's own scrolling box, and no section is empty. Screenshots go to
the artifacts folder (`$HEVAL_ARTIFACTS`, default `artifacts/`): the top of the page (runs and
results), the plots, and the whole page at both widths.
"""

from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from heval_inspect.report import build_report
from heval_inspect.report.render import write_all
from heval_inspect.tasks import humaneval

from .conftest import CHROMIUM
from .report_logs import TIMEOUT, run
from .test_viewer import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.data, pytest.mark.slow]

TABLES = ("runs", "results", "differences", "failures", "gaps")
WIDTH = 1366  # a laptop's screen
PHONE = 390
PLOTS = ("pass1", "passk", "failures", "differences")


@pytest.fixture(scope="module")
def page_file(report_logs, tmp_path_factory):
    """The report of the two HumanEval "models", a twin of the first (a run with the same
    figures, which the plots must not hide), the infilling run (for the gap tables), and the
    first model's run of the renamed variant (a variant gap, with the task ids that flip)."""
    folder = tmp_path_factory.mktemp("report")
    log = read_eval_log(report_logs["canonical"])
    log.eval.metadata["label"] = "twin"
    write_eval_log(log, str(folder / "twin.eval"))
    mutant_answers = Path(report_logs["canonical"]).parents[1] / "mutant.jsonl"
    renamed = humaneval(
        samples=str(mutant_answers), partial=True, timeout=TIMEOUT, sandbox="local", k="1,3",
        variant="renamed",
    )  # fmt: skip
    variant = run(renamed, folder / "renamed", metadata={"label": "canonical"})
    report = build_report(
        [report_logs["canonical"], str(folder / "twin.eval"), report_logs["mutant"],
         report_logs["infilling"], variant],
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
        # canonical, twin, mutant, and canonical on the renamed variant
        assert results.first.locator("tbody tr").count() == 4
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


@pytest.mark.parametrize("width", [WIDTH, PHONE])
def test_the_page_fits_a_laptop_and_a_phone_with_no_empty_section(page_file, width):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(page_file.resolve().as_uri())
        page.wait_for_load_state("networkidle")
        # Nothing to scroll sideways but a table, inside its own box: each box, plot, heading,
        # paragraph and list item ends inside the window.
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        past = page.evaluate(
            """width => [...document.querySelectorAll(
                   'div.scroll, figure, figure svg, h1, h2, h3, p, li')]
                 .filter(e => e.getBoundingClientRect().right > width + 0.5)
                 .map(e => e.tagName + ': ' + e.textContent.slice(0, 60))""",
            width,
        )
        assert past == [], past
        text = page.locator("body").inner_text()
        assert "(none)" not in text
        # The verdicts first: the comparison of the two models, and the variant gap's.
        verdicts = page.locator("h2").first
        assert verdicts.inner_text() == "Verdicts"
        said = page.locator("h2:first-of-type + ul li").all_inner_texts()
        assert any(s.startswith("mutant is worse than canonical") for s in said), said
        assert any(s.startswith("renamed costs canonical") for s in said), said
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"report-{width}px.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert shot.stat().st_size > 10_000
