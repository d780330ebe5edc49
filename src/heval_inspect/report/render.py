"""The report's files: Markdown (report.md), the HTML page (report.html) and the CSV files, all
made before any is written; and Markdown tables.
"""

import csv
from pathlib import Path

from .build import Report
from .page import html_page
from .tables import (
    SECTIONS,
    VERDICTS,
    columns_of,
    differences_csv_rows,
    failures_csv_rows,
    gaps_csv_rows,
    results_csv_rows,
    tables_of,
)
from .verdicts import verdicts


def markdown_table(rows: list[dict]) -> str:
    if not rows:
        return "(none)\n"
    columns = columns_of(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows:
        cells = [str(row.get(c, "")).replace("|", "\\|") for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=columns_of(rows) or ["empty"])
        writer.writeheader()
        writer.writerows(rows)


def markdown(report: Report) -> str:
    parts = ["# heval-inspect report\n"]
    if said := verdicts(report):
        parts.append(f"## {VERDICTS}\n\n" + "".join(f"- {sentence}\n" for sentence in said))
    for title, _, tables, text in SECTIONS:
        found = {subtitle: rows for subtitle, rows in tables_of(tables, report).items() if rows}
        if not found:
            continue
        parts.append(f"## {title}\n\n{text}\n")
        for subtitle, rows in found.items():
            parts.append((f"### {subtitle}\n\n" if subtitle else "") + markdown_table(rows))
    if report.notes:
        parts.append("## Notes\n\n" + "".join(f"- {note}\n" for note in report.notes))
    return "\n".join(parts)


def write_all(report: Report, out: Path) -> dict[str, Path]:
    """Write report.md, report.html and the CSV files into `out`; returns them by name."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "markdown": out / "report.md",
        "html": out / "report.html",
        "results": out / "results.csv",
        "differences": out / "differences.csv",
        "failures": out / "failures.csv",
        "gaps": out / "gaps.csv",
    }
    # Every view made before any is written: a report that fails leaves no partial one behind.
    texts = {"markdown": markdown(report), "html": html_page(report)}
    for name, text in texts.items():
        files[name].write_text(text, encoding="utf-8")
    write_csv(files["results"], results_csv_rows(report))
    write_csv(files["differences"], differences_csv_rows(report))
    write_csv(files["failures"], failures_csv_rows(report))
    write_csv(files["gaps"], gaps_csv_rows(report))
    return files
