"""The report's views: tables (terminal, Markdown, CSV) and one self-contained HTML page.

Every table is a list of rows (dicts of column name to text or number) made once from the
`Report`; each view only formats them. The HTML page holds its style and its plots (inline SVG)
itself: it loads nothing, from the network or from disk.
"""

import csv
import html
import math
from pathlib import Path

from rich.console import Console
from rich.table import Table

from . import Report
from .failures import KINDS
from .plots import all_plots
from .stats import Z_95, Z_POWER_80

CAPTIONS = {
    "pass1": "pass@1 of each run per subset and blend; bars: 95% intervals (clustered by problem).",
    "passk": "pass@k against k over all of each run's tasks, for every k its epochs allow.",
    "failures": "Share of each kind of verdict, per run and subset.",
    "differences": "Paired differences in pass@1 (run minus baseline) with 95% intervals.",
}


def number(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def p_value(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2g}"


def interval(value: float, stderr: float) -> str:
    return f"{number(value)} [{number(value - Z_95 * stderr)}, {number(value + Z_95 * stderr)}]"


def runs_table(report: Report) -> list[dict]:
    rows = []
    for result in report.results:
        run = result.run
        epochs = result.epochs
        rows.append(
            {
                "run": run.label,
                "model": run.model,
                "task": run.task,
                "version": run.version,
                "tasks": len(set(run.samples.task_id)),
                "epochs": str(epochs[0]) if epochs[0] == epochs[1] else f"{epochs[0]}-{epochs[1]}",
                "timeout (s)": "n/a" if run.timeout is None else f"{run.timeout:g}",
                "shards merged": run.shards or "not sharded",
                "logs": ", ".join(Path(f).name for f in run.files),
            }
        )
    return rows


def results_tables(report: Report) -> dict[str, list[dict]]:
    """The results table of each task (their subsets and blends differ)."""
    tasks = dict.fromkeys(result.run.task for result in report.results)
    return {task: results_table(report, task=task) for task in tasks}


def results_table(report: Report, wide: bool = True, task: str | None = None) -> list[dict]:
    """One row per run, a column group per subset and blend (`wide`), or one row per run and
    group (the terminal's, which is narrower). `task`: only the runs of that task."""
    rows = []
    for result in report.results:
        if task is not None and result.run.task != task:
            continue
        row = {"run": result.run.label}
        for group in report.groups:
            figures = result.groups.get(group)
            if figures is None:
                continue
            cells = {
                name: interval(f.value, f.stderr) if name.startswith("pass@") else number(f.value)
                for name, f in figures.items()
                if name != "exact_match_stripped"
            }
            cells["tasks"] = result.tasks[group]
            if wide:
                row |= {f"{group} {name}": cell for name, cell in cells.items()}
            else:
                rows.append({"run": result.run.label, "group": group} | cells)
        if wide:
            epochs = result.epochs
            row["epochs"] = str(epochs[0]) if epochs[0] == epochs[1] else f"{epochs[0]}-{epochs[1]}"
            rows.append(row)
    return rows


def results_csv_rows(report: Report) -> list[dict]:
    """Every figure with its standard error and interval, one row per run, group and figure."""
    return [
        {
            "run": result.run.label, "model": result.run.model, "task": result.run.task,
            "version": result.run.version, "group": group, "figure": name,
            "value": f.value, "stderr": f.stderr, "ci95_low": f.low, "ci95_high": f.high,
            "tasks": result.tasks[group], "epochs_min": result.epochs[0],
            "epochs_max": result.epochs[1],
        }
        for result in report.results
        for group, figures in result.groups.items()
        for name, f in figures.items()
    ]  # fmt: skip


def differences_table(report: Report, raw: bool = False) -> list[dict]:
    rows = []
    for comparison in report.comparisons:
        for d in comparison.differences:
            if not raw and d.figure.startswith("exact"):
                continue
            shown = {
                "run": comparison.other.label,
                "baseline": comparison.baseline.label,
                "group": d.group,
                "figure": d.figure,
            }
            if raw:
                rows.append(
                    shown | {
                        "baseline_value": d.baseline_value, "run_value": d.other_value,
                        "difference": d.difference, "stderr": d.stderr, "ci95_low": d.low,
                        "ci95_high": d.high, "z": d.z, "p_value": d.p_value,
                        "minimum_detectable_effect": d.minimum_detectable, "tasks": d.tasks,
                        "problems": d.problems, "run_better": d.other_better,
                        "baseline_better": d.baseline_better, "same": d.same,
                    }
                )  # fmt: skip
                continue
            rows.append(
                shown
                | {
                    "baseline value": number(d.baseline_value),
                    "run value": number(d.other_value),
                    "difference [95%]": interval(d.difference, d.stderr),
                    "SE": number(d.stderr, 4),
                    "p": p_value(d.p_value),
                    "MDE (80%)": number(d.minimum_detectable),
                    "tasks": d.tasks,
                    "run better": d.other_better,
                    "baseline better": d.baseline_better,
                }
            )
    return rows


def failures_table(report: Report, raw: bool = False) -> list[dict]:
    rows = []
    for row in report.failures:
        kinds = [k for k in KINDS if k != "no verdict" or row.counts[k]]
        if raw:
            rows += [
                {"run": row.run, "subset": row.subset, "kind": kind, "count": row.counts[kind],
                 "share": row.counts[kind] / max(1, row.total)}
                for kind in KINDS
            ]  # fmt: skip
            continue
        rows.append(
            {"run": row.run, "subset": row.subset}
            | {
                kind: f"{row.counts[kind]} ({100 * row.counts[kind] / max(1, row.total):.1f}%)"
                for kind in kinds
            }
            | {"samples": row.total}
        )
    return rows


def gaps_table(report: Report, raw: bool = False) -> list[dict]:
    if raw:
        return [
            {"run": g.run, "subset": g.subset, "by": g.by, "bucket": g.bucket, "tasks": g.tasks,
             "pass@1": g.pass_at_1, "stderr": g.stderr,
             "ci95_low": g.pass_at_1 - Z_95 * g.stderr, "ci95_high": g.pass_at_1 + Z_95 * g.stderr}
            for g in report.gaps
        ]  # fmt: skip
    return [
        {"run": g.run, "subset": g.subset, "by": g.by, "gap": g.bucket, "tasks": g.tasks,
         "pass@1 [95%]": interval(g.pass_at_1, g.stderr)}
        for g in report.gaps
    ]  # fmt: skip


def _columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(key for row in rows for key in row))


def markdown_table(rows: list[dict]) -> str:
    if not rows:
        return "(none)\n"
    columns = _columns(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows:
        cells = [str(row.get(c, "")).replace("|", "\\|") for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=_columns(rows) or ["empty"])
        writer.writeheader()
        writer.writerows(rows)


SECTIONS = (
    ("Runs", runs_table, "Each run, with the logs it was read from and the shards merged."),
    ("Results", results_tables, "Each figure with its 95% interval (figure +- 1.96 x its "
     "standard error, clustered by HumanEval problem); exact match as a share of epochs."),
    ("Paired comparison", differences_table, "Run minus baseline on the tasks both ran: the "
     "difference, its paired standard error clustered by problem, its 95% interval, the "
     "two-sided p-value, and the minimum detectable effect at 80% power and 5% significance "
     "((1.96 + 0.84) x SE); the tasks on which each run does better (per-task pass@1)."),
    ("Why they fail", failures_table, "Each verdict's kind, per run and subset: count (share)."),
    ("pass@1 by gap", gaps_table, "Infilling: pass@1 by the number of lines the canonical gap "
     "spans, and for random span by whether the gap starts or ends in the middle of a line."),
)  # fmt: skip


def _tables(table, report: Report) -> dict[str, list[dict]]:
    """A section's tables by their titles ("" for a section of one table)."""
    tables = table(report)
    return tables if isinstance(tables, dict) else {"": tables}


def markdown(report: Report) -> str:
    parts = ["# heval-inspect report\n"]
    for title, table, text in SECTIONS:
        parts.append(f"## {title}\n\n{text}\n")
        for subtitle, rows in _tables(table, report).items():
            parts.append((f"### {subtitle}\n\n" if subtitle else "") + markdown_table(rows))
    if report.notes:
        parts.append("## Notes\n\n" + "".join(f"- {note}\n" for note in report.notes))
    return "\n".join(parts)


def terminal(report: Report, console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:  # a pipe or a file: wide enough not to fold the tables
            console = Console(width=200)
    views = (
        ("Results", results_table(report, wide=False)),
        ("Paired comparison", [r for r in differences_table(report) if r["figure"] == "pass@1"]),
        ("Why they fail", failures_table(report)),
    )
    for title, rows in views:
        if not rows:
            continue
        table = Table(title=title, title_justify="left")
        for column in _columns(rows):
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(str(row.get(c, "")) for c in _columns(rows)))
        console.print(table)
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {note}")


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f2f2f2; } td:first-child, th:first-child { text-align: left; }
.scroll { overflow-x: auto; } figure { margin: 1em 0 2em; } figcaption { color: #555; }
figure svg { max-width: 100%; height: auto; } p.lead { color: #444; max-width: 60em; }
"""


def html_table(rows: list[dict], name: str) -> str:
    if not rows:
        return f'<p id="table-{name}">(none)</p>'
    columns = _columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in columns) + "</tr>"
        for r in rows
    )
    return (
        f'<div class="scroll"><table id="table-{name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def html_page(report: Report) -> str:
    plots = all_plots(report)
    names = ["runs", "results", "differences", "failures", "gaps"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # Nothing may be fetched: no scripts, styles, fonts or images from anywhere.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">",
        f"<title>heval-inspect report</title><style>{STYLE}</style></head><body>",
        "<h1>heval-inspect report</h1>",
    ]
    for (title, table, text), name in zip(SECTIONS, names, strict=True):
        parts.append(f"<h2>{html.escape(title)}</h2><p class=\"lead\">{html.escape(text)}</p>")
        for subtitle, rows in _tables(table, report).items():
            if subtitle:
                parts.append(f"<h3>{html.escape(subtitle)}</h3>")
            parts.append(html_table(rows, f"{name}-{subtitle}" if subtitle else name))
        if name == "results":
            parts += [_figure(plots, "pass1"), _figure(plots, "passk")]
        elif name == "differences" and "differences" in plots:
            parts.append(_figure(plots, "differences"))
        elif name == "failures":
            parts.append(_figure(plots, "failures"))
    if report.notes:
        parts.append("<h2>Notes</h2><ul>")
        parts += [f"<li>{html.escape(note)}</li>" for note in report.notes]
        parts.append("</ul>")
    parts.append(
        f"<p class=\"lead\">z<sub>0.975</sub> = {Z_95:.4f}, z<sub>0.80</sub> = "
        f"{Z_POWER_80:.4f}. Paired standard errors as in Miller (2024), Adding Error Bars to "
        f"Evals, arXiv 2411.00640.</p></body></html>"
    )
    return "\n".join(parts)


def _figure(plots: dict[str, str], name: str) -> str:
    return (
        f'<figure id="plot-{name}">{plots[name]}'
        f"<figcaption>{html.escape(CAPTIONS[name])}</figcaption></figure>"
    )


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
    files["markdown"].write_text(markdown(report), encoding="utf-8")
    files["html"].write_text(html_page(report), encoding="utf-8")
    write_csv(files["results"], results_csv_rows(report))
    write_csv(files["differences"], differences_table(report, raw=True))
    write_csv(files["failures"], failures_table(report, raw=True))
    write_csv(files["gaps"], gaps_table(report, raw=True))
    return files
