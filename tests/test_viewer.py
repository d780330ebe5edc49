"""A real log in `inspect view`, as a user sees it in a browser (headless Chromium).

Debian's Chromium, driven by PyPI's Playwright (no browser download). The log header must lead
with the headline figure and its error bar, and a failed sample's scoring view must show its
verdict and its answer as code. Screenshots of both go to the artifacts folder
(`$HEVAL_ARTIFACTS`, default `artifacts/` in the project, which git ignores).
"""

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.data import SUBSETS, load_official
from heval_inspect.tasks import humaneval_infilling

from .conftest import CHROMIUM

pytestmark = [pytest.mark.browser, pytest.mark.docker]

ARTIFACTS = Path(os.environ.get("HEVAL_ARTIFACTS", Path(__file__).parents[1] / "artifacts"))
WRONG = ("MultiLineInfilling/HumanEval/0/L0_L0", "    for idx, elem in enumerate(numberz):\n")
PASSING = [
    "SingleLineInfilling/HumanEval/0/L0",
    "SingleLineInfilling/HumanEval/2/L0",
    "MultiLineInfilling/HumanEval/1/L0_L1",
]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    """A run of two subsets: three canonical answers and one that names a variable wrong."""
    work = tmp_path_factory.mktemp("viewer")
    records = {
        record["task_id"]: record
        for name in ("single_line", "multi_line")
        for record in load_official(SUBSETS[name])
    }
    rows = [{"task_id": t, "completion": records[t]["canonical_solution"]} for t in PASSING]
    rows.append({"task_id": WRONG[0], "completion": WRONG[1]})
    samples = work / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    [log] = inspect_eval(
        humaneval_infilling(subsets="single_line,multi_line", samples=str(samples), partial=True),
        model="none",
        log_dir=str(work / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    return work / "logs"


@pytest.fixture(scope="module")
def viewer(log_dir):
    with serve_viewer(log_dir) as url:
        yield url


@contextlib.contextmanager
def serve_viewer(log_dir):
    """`inspect view` on the log folder, on a free local port; yields its address."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    inspect = str(Path(sys.executable).with_name("inspect"))
    server = subprocess.Popen(
        [inspect, "view", "--log-dir", str(log_dir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url, timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"inspect view did not answer on {url}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def page(viewer):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        yield page
        browser.close()


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    return path


def test_log_header_leads_with_the_headline_and_its_error_bar(page, viewer):
    page.goto(viewer)
    # The only log in the folder opens; its header's first figures are the headline (3 of 4
    # tasks pass) and its standard error, clustered by problem.
    headline = page.get_by_text(re.compile(r"^sample_weighted/pass@1$", re.I))
    headline.first.wait_for(timeout=60_000)
    header = page.locator("body").inner_text()
    figures = re.findall(r"(\S+)\n([\d.]+)\n", header)
    assert figures[0] == ("SAMPLE_WEIGHTED/PASS@1", "0.75"), figures
    assert figures[1][0] == "STDERR[PROBLEM_ID]", figures
    assert [name for name, _ in figures[2:4]] == ["SINGLE_LINE/PASS@1", "MULTI_LINE/PASS@1"]
    assert shot(page, "log-header.png").stat().st_size > 0


def test_a_failed_sample_shows_its_verdict_and_answer_as_code(page, viewer):
    page.goto(viewer)
    # The sample list shows each answer in code font; open the wrong one.
    answer = page.locator("code", has_text="enumerate(numberz)")
    answer.first.wait_for(timeout=60_000)
    answer.first.click()
    page.get_by_role("tab", name="Scoring").click()
    verdict = page.get_by_text("failed: name 'numberz' is not defined")
    verdict.first.wait_for(timeout=30_000)
    # The explanation: the verdict first, then the gap in context with the model's line marked,
    # in a code block that keeps its lines and indentation.
    gap = page.locator("pre", has_text="+ 13 |     for idx, elem in enumerate(numberz):")
    gap.first.wait_for(timeout=30_000)
    assert "  14 |         for idx2, elem2 in enumerate(numbers):" in gap.first.inner_text()
    assert page.locator("code", has_text="for idx, elem in enumerate(numberz):").count() >= 2
    assert shot(page, "sample-scoring.png").stat().st_size > 0
    # The whole program, tests included, in the sample's transcript.
    page.get_by_role("tab", name="Transcript").click()
    page.get_by_text("Program (as it ran):").first.wait_for(timeout=30_000)
    program = page.locator("pre", has_text="def check(candidate):")
    program.first.wait_for(timeout=30_000)
    assert "for idx, elem in enumerate(numberz):" in program.first.inner_text()
    assert shot(page, "sample-transcript.png").stat().st_size > 0


def test_a_standard_error_from_one_problem_shows_as_nan_not_zero(page, tmp_path):
    # Two epochs of one problem, one passing: pass@1 0.5, and no spread across problems to
    # measure; the header must not show a standard error of 0.
    problem = load_official(SUBSETS["random_span_light"])[0]
    rows = [problem["canonical_solution"], "    return None\n"]
    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        "".join(json.dumps({"task_id": problem["task_id"], "completion": c}) + "\n" for c in rows)
    )
    # A process of its own: this module's browser already runs an event loop in this one.
    run = subprocess.run(
        [str(Path(sys.executable).with_name("inspect")), "eval",
         "heval_inspect/humaneval_random_span_infilling_light", "--model", "none",
         "-T", f"samples={samples}", "-T", "partial=true", "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    with serve_viewer(tmp_path / "logs") as url:
        page.goto(url)
        page.get_by_text(re.compile(r"^pass@1$", re.I)).first.wait_for(timeout=60_000)
        figures = re.findall(r"(\S+)\n(\S+)\n", page.locator("body").inner_text())
    assert ("PASS@1", "0.5") in figures and ("STDERR[PROBLEM_ID]", "NaN") in figures, figures
