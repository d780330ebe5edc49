"""The terminal report at 80 and 100 columns: no name cut, no figure or interval broken over
lines, nothing wider than the terminal, with long run names, several runs and every subset.

The runs are the report tests' real logs (tests/report_logs.py), two of them relabelled with
long model-like names (Inspect's own log writer), so that every section has long names: the
results of each subset and blend, paired comparisons, failure kinds and gap shapes.
"""

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

pytestmark = [pytest.mark.data, pytest.mark.slow]  # real logs, their programs in the local sandbox

BIN = Path(sys.executable).parent
LONG_NAMES = {
    "canonical": "anthropic/claude-sonnet-4-20250514-thinking",
    "infilling": "openai/think-humaneval-infilling-2025-08-07",
}
HEADERS = ("pass@1 [95%]", "exact match", "difference [95%]", "better (run / baseline)",
           "left out: the baseline's", "MDE (80%)", "shards merged", "timeout (s)")  # fmt: skip


@pytest.fixture(scope="module")
def long_named(report_logs, tmp_path_factory) -> list[str]:
    """Two runs under long names, beside the runs they copy and the others."""
    work = tmp_path_factory.mktemp("long-names")
    logs = [report_logs["canonical"], report_logs["mutant"], *report_logs["shards"]]
    for name, label in LONG_NAMES.items():
        log = read_eval_log(report_logs[name])
        log.eval.metadata["label"] = label
        write_eval_log(log, str(work / f"{name}.eval"))
        logs.append(str(work / f"{name}.eval"))
    return logs


def _figures(out: Path) -> list[str]:
    """Every interval the report prints, from its CSV files: `[low, high]` to 3 decimals."""
    shown = []
    for name in ("results.csv", "differences.csv", "gaps.csv"):
        for row in csv.DictReader((out / name).read_text(encoding="utf-8").splitlines()):
            if row.get("figure", "pass@1").startswith("pass@") and row["ci95_low"] != "nan":
                low, high = (float(row[key]) for key in ("ci95_low", "ci95_high"))
                shown.append(f"[{low:.3f}, {high:.3f}]".replace("-0.000", "0.000"))
    return shown


@pytest.mark.parametrize("columns", [80, 100])
def test_the_terminal_report_cuts_no_name_and_breaks_no_figure(long_named, tmp_path, columns):
    out = tmp_path / "out"
    run = subprocess.run(
        [str(BIN / "heval-inspect"), "report", *long_named, "--out", str(out)],
        capture_output=True, text=True, check=False,
        env=os.environ | {"COLUMNS": str(columns)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if str(out) not in line]
    text = "\n".join(lines)
    assert "…" not in text
    assert max(map(len, lines)) <= columns
    words = set(text.split())
    # Every run's name, task and version, and every subset and blend, whole.
    results = list(csv.DictReader((out / "results.csv").read_text(encoding="utf-8").splitlines()))
    for row in results:
        name = row["run"].split(" (")[0]
        assert {name, f"({row['task']}", f"{row['version']})", row["group"]} <= words, row
    assert set(LONG_NAMES.values()) <= words
    # Each comparison's title and every column's name, whole (wrapped at spaces at most).
    flowing = " ".join(text.split())
    for row in csv.DictReader((out / "differences.csv").read_text(encoding="utf-8").splitlines()):
        assert f"{row['run']} minus {row['baseline']}" in flowing
    for header in HEADERS:
        assert set(header.split()) <= words, header
    # Every interval on one line, never split at its comma.
    for interval in _figures(out):
        assert interval in text, interval
    assert not re.search(r"\[[^\]\n]*\n", text)
