"""The report's views: tables (terminal, Markdown, CSV) and one self-contained HTML page.

Every table is a list of rows (dicts of column name to text or number) made once from the
`Report`; each view only formats them. The HTML page holds its style and its plots (inline SVG)
itself: it loads nothing, from the network or from disk.
"""

import csv
import html
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .build import Report
from .failures import KINDS
from .numbers import number, p_value
from .plots import all_plots
from .stats import Figure, Results
from .verdicts import verdicts

CAPTIONS = {
    "pass1": "pass@1 of each run per subset and blend; bars: 95% intervals (clustered by problem).",
    "passk": "pass@k against k over all of each run's tasks, for every k its epochs allow.",
    "failures": "Share of each kind of verdict, per run and subset.",
    "differences": "Paired differences in pass@1 (run minus baseline) with 95% intervals.",
}
HEADLINE = "sample_weighted"
# The first section, where the report has comparisons: each one's verdict in a sentence.
VERDICTS = "Verdicts"
TERMINAL_WIDTH = 100


def interval(value: float, low: float, high: float) -> str:
    """`value [low, high]`, or why there is no interval: a figure from one problem has none."""
    if math.isnan(low):
        return f"{number(value)} (one problem: no interval)"
    return f"{number(value)} [{number(low)}, {number(high)}]"


def rate(figure: Figure) -> str:
    return interval(figure.value, figure.low, figure.high)


def _epochs(result: Results) -> str:
    fewest, most = result.epochs
    return str(fewest) if fewest == most else f"{fewest}-{most}"


def _counted(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def runs_tables(report: Report) -> dict[str, list[dict]]:
    rows = [
        {
            "run": result.run.label,
            "model": result.run.model,
            "tasks": len(set(result.run.samples.task_id)),
            "problems": len(set(result.run.samples.problem)),
            "epochs": _epochs(result),
            "timeout (s)": "n/a" if result.run.timeout is None else f"{result.run.timeout:g}",
            "shards merged": result.run.shards or "not sharded",
            "logs": ", ".join(Path(f).name for f in result.run.files),
        }
        for result in report.results
    ]
    return {"": rows}


def results_tables(report: Report) -> dict[str, list[dict]]:
    """A table per task and group (subset or blend), one row per run."""
    tables: dict[str, list[dict]] = {}
    for result in report.results:
        task = result.run.task
        for group, figures in result.groups.items():
            title = task if group == task else f"{task}: {group}"
            if group == HEADLINE:
                title += " (the headline)"
            row = {"run": result.run.label, "tasks": result.tasks[group], "epochs": _epochs(result)}
            row |= {
                f"{name} [95%]": rate(f) for name, f in figures.items() if name.startswith("pass@")
            }
            row["exact match"] = number(figures["exact_match"].value)
            tables.setdefault(title, []).append(row)
    return tables


def results_csv_rows(report: Report) -> list[dict]:
    """Every figure with its standard error and interval, one row per run, group and figure."""
    return [
        {
            "run": result.run.label, "model": result.run.model, "task": result.run.task,
            "version": result.run.version, "group": group, "figure": name,
            "value": f.value, "stderr_metric": f.stderr, "stderr_cr2": f.clustered_stderr,
            "ci95_low": f.low, "ci95_high": f.high,
            "tasks": result.tasks[group], "epochs_min": result.epochs[0],
            "epochs_max": result.epochs[1],
        }
        for result in report.results
        for group, figures in result.groups.items()
        for name, f in figures.items()
    ]  # fmt: skip


def compared_tables(report: Report) -> dict[str, list[dict]]:
    """Each comparison's tasks: compared, and left out because only one of the runs has them."""

    def tasks(counts: tuple[int, int]) -> str:
        count, problems = counts
        return f"{count} ({_counted(problems, 'problem')})" if count else "0"

    rows = [
        {
            "run": c.other.label,
            "baseline": c.baseline.label,
            "tasks compared": tasks((c.common_tasks, c.common_problems)),
            "left out: the run's": tasks(c.only_other),
            "left out: the baseline's": tasks(c.only_baseline),
        }
        for c in report.comparisons
    ]
    return {"Tasks compared": rows} if rows else {}


def differences_tables(report: Report) -> dict[str, list[dict]]:
    """A table per comparison, one row per group and pass@k."""
    tables = {}
    for c in report.comparisons:
        groups = {d.group for d in c.differences}
        tables[c.title] = [
            ({"group": d.group} if len(groups) > 1 else {})
            | {
                "figure": d.figure,
                "baseline": number(d.baseline_value),
                "run": number(d.other_value),
                "difference [95%]": interval(d.difference, d.low, d.high),
                "SE": number(d.stderr, 4),
                "p": p_value(d.p_value),
                "MDE (80%)": number(d.minimum_detectable),
                "tasks": d.tasks,
                "better (run / baseline)": f"{d.other_better} / {d.baseline_better}",
            }
            for d in c.differences
            # a variant gap: exact match too, since recalling the original's text is the point
            if d.figure.startswith("pass@") or (c.variant_gap and d.figure == "exact_match")
        ]
    return tables


def flips_tables(report: Report) -> dict[str, list[dict]]:
    """Each variant gap's tasks that flip at the smallest k: those it loses and gains."""
    tables = {}
    for c in report.comparisons:
        if c.variant_gap and c.flips:
            figure = min(c.flips, key=lambda name: int(name.removeprefix("pass@")))
            lost, gained = c.flips[figure]
            tables[f"{c.title}: tasks that flip ({figure})"] = [
                {"flip": flip, "tasks": len(ids), "task ids": ", ".join(ids) or "none"}
                for flip, ids in (
                    (f"lower in {c.other.variant.name}", lost),
                    (f"higher in {c.other.variant.name}", gained),
                )
            ]  # fmt: skip
    return tables


def differences_csv_rows(report: Report) -> list[dict]:
    return [
        {
            "run": c.other.label, "baseline": c.baseline.label, "group": d.group,
            "figure": d.figure, "baseline_value": d.baseline_value, "run_value": d.other_value,
            "difference": d.difference, "stderr_cr2": d.stderr, "ci95_low": d.low,
            "ci95_high": d.high, "t": d.t, "degrees_of_freedom": d.degrees_of_freedom,
            "p_value": d.p_value, "minimum_detectable_effect": d.minimum_detectable,
            "tasks": d.tasks, "problems": d.problems, "run_better": d.other_better,
            "baseline_better": d.baseline_better, "same": d.same,
        }
        for c in report.comparisons
        for d in c.differences
    ]  # fmt: skip


def failures_tables(report: Report) -> dict[str, list[dict]]:
    """A table per run, one row per subset: each kind's count (share)."""
    tables: dict[str, list[dict]] = {}
    for row in report.failures:
        kinds = [k for k in KINDS if k != "no verdict" or row.counts[k]]
        tables.setdefault(row.run, []).append(
            {"subset": row.subset}
            | {
                kind: f"{row.counts[kind]} ({100 * row.counts[kind] / max(1, row.total):.1f}%)"
                for kind in kinds
            }
            | {"samples": row.total}
        )
    return tables


def failures_csv_rows(report: Report) -> list[dict]:
    return [
        {"run": row.run, "subset": row.subset, "kind": kind, "count": row.counts[kind],
         "share": row.counts[kind] / max(1, row.total)}
        for row in report.failures
        for kind in KINDS
    ]  # fmt: skip


def gaps_tables(report: Report) -> dict[str, list[dict]]:
    """A table per run, one row per subset and gap shape."""
    tables: dict[str, list[dict]] = {}
    for g in report.gaps:
        shape = g.bucket
        if g.by == "gap lines":
            shape = {"0 (empty)": "empty", "1": "1 line"}.get(g.bucket, f"{g.bucket} lines")
        tables.setdefault(g.run, []).append(
            {"subset": g.subset, "gap": shape, "tasks": g.tasks, "pass@1 [95%]": rate(g.pass_at_1)}
        )
    return tables


def gaps_csv_rows(report: Report) -> list[dict]:
    return [
        {"run": g.run, "subset": g.subset, "by": g.by, "bucket": g.bucket, "tasks": g.tasks,
         "pass@1": g.pass_at_1.value, "stderr_cr2": g.pass_at_1.clustered_stderr,
         "ci95_low": g.pass_at_1.low, "ci95_high": g.pass_at_1.high}
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


# What makes a section's tables (by their titles) from the report.
Tables = Callable[[Report], dict[str, list[dict]]]
SECTIONS = (
    ("Runs", "runs", runs_tables, (
        "Each run, with the logs it was read from and the shards merged. A run is labelled by "
        "its name, its task and the task's version, and its variant, if any: in humaneval 4-A, "
        "4 goes up when a change can move scores (runs of different numbers are not compared) "
        "and A when the task's arguments change; CHANGELOG.md says what each version changed.")),
    ("Results", "results", results_tables, (
        "Each figure with its 95% interval: Wilson's interval on the effective number of tasks "
        "(the clustering by HumanEval problem taken into account), its end towards 0 or 1 "
        "reaching as far as Jeffreys' interval's; it stays within [0, 1], and a figure from one "
        "problem has none. Exact match: the share of epochs whose span is the canonical one.")),
    ("Paired comparison", "differences", (compared_tables, differences_tables, flips_tables), (
        "Run minus baseline on the tasks both ran (the tasks only one of them ran are left out, "
        "and counted): the difference, its paired standard error clustered by problem (SE), its "
        "95% interval, the two-sided p-value, and the minimum detectable effect at 80% power "
        "and 5% significance (MDE), with Student's t on the effective degrees of freedom; the "
        "tasks on which each run does better.")),
    ("Why they fail", "failures", failures_tables,
     "Each verdict's kind, per run and subset: count (share)."),
    ("pass@1 by gap", "gaps", gaps_tables, (
        "Infilling: pass@1 by the number of lines the canonical gap spans, and for random span "
        "by whether the gap starts or ends in the middle of a line.")),
)  # fmt: skip
# What the terminal leaves out to fit its width: in the Markdown and HTML views and the CSV files.
TERMINAL_OMITS = {
    "runs": ("logs",), "results": ("epochs",), "differences": ("SE", "task ids"),
}  # fmt: skip


def _tables(tables: "Tables | tuple[Tables, ...]", report: Report) -> dict[str, list[dict]]:
    """A section's tables by their titles ("" for a table of no title of its own)."""
    if isinstance(tables, tuple):
        return {title: rows for each in tables for title, rows in _tables(each, report).items()}
    return tables(report)


def markdown(report: Report) -> str:
    parts = ["# heval-inspect report\n"]
    if said := verdicts(report):
        parts.append(f"## {VERDICTS}\n\n" + "".join(f"- {sentence}\n" for sentence in said))
    for title, _, tables, text in SECTIONS:
        found = {subtitle: rows for subtitle, rows in _tables(tables, report).items() if rows}
        if not found:
            continue
        parts.append(f"## {title}\n\n{text}\n")
        for subtitle, rows in found.items():
            parts.append((f"### {subtitle}\n\n" if subtitle else "") + markdown_table(rows))
    if report.notes:
        parts.append("## Notes\n\n" + "".join(f"- {note}\n" for note in report.notes))
    return "\n".join(parts)


def terminal(report: Report, console: Console | None = None) -> None:
    """Every section's tables, as wide as the terminal (or COLUMNS) up to 100 columns, else 100.

    No name is cut and no figure is broken: a cell breaks only before an interval or a
    parenthesis (`0.542` over `[0.306, 0.760]`), or at a space of plain words; a table that
    cannot fit so is shown one row at a time, each column's name beside its value (`_records`).
    The results of a task of several subsets are a table per run (`_results_by_task`).
    """
    if console is None:
        console = Console()
        told = console.is_terminal or "COLUMNS" in os.environ
        console = Console(width=min(console.width, TERMINAL_WIDTH) if told else TERMINAL_WIDTH)
    if said := verdicts(report):
        console.rule(f"[bold]{VERDICTS}", align="left")
        for sentence in said:
            # Broken between words, never inside an interval.
            words = re.findall(r"\S*\[[^\]]*\]\S*|\S+", sentence)
            console.print(Text("\n".join(_wrapped(words, console.width))), overflow="fold")
    for title, name, tables, _ in SECTIONS:
        found = {t: rows for t, rows in _tables(tables, report).items() if rows}
        if name == "results":
            found = _results_by_task(found)
        if not found:
            continue
        console.rule(f"[bold]{title}", align="left")
        for subtitle, rows in found.items():
            columns = [c for c in _columns(rows) if c not in TERMINAL_OMITS.get(name, ())]
            if name == "failures":  # kinds no sample of the run has
                columns = [c for c in columns if any(not str(r[c]).startswith("0 (") for r in rows)]
            cells = [[str(row.get(c, "")) for c in columns] for row in rows]
            if subtitle:
                console.print(Text(subtitle), overflow="fold")
            widths = _widths(columns, cells, console.width)
            if widths is None:
                _records(console, columns, cells)
                continue
            table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
            for column, width in zip(columns, widths, strict=True):
                table.add_column("\n".join(_wrapped(column.split(), width)), width=width,
                                 no_wrap=True, overflow="fold")  # fmt: skip
            for line in cells:
                table.add_row(
                    *(
                        "\n".join(_wrapped(_parts(cell), width))
                        for cell, width in zip(line, widths, strict=True)
                    )
                )
            console.print(table)
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {note}", overflow="fold")


def _parts(cell: str) -> list[str]:
    """A cell's pieces that a line break may separate: before an interval or a parenthesis, and
    between the words of plain text (with no digit: not a figure, a version or a name)."""
    parts: list[str] = []
    for piece in re.split(r" (?=[\[(])", cell):
        parts += piece.split() if not re.search(r"\d", piece) else [piece]
    return parts or [""]


def _wrapped(parts: list[str], width: int) -> list[str]:
    """The parts as lines of at most `width` (a part wider stays whole, on a line of its own)."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += " " + part
        else:
            lines.append(part)
    return lines


def _widths(columns: list[str], cells: list[list[str]], room: int) -> list[int] | None:
    """Each column's width so that the table fits `room` (None if it cannot): at least its
    widest unbreakable part, and the room left given, a column at a time, where it saves most
    lines for the room it takes (the table's height first, then its lines in all)."""
    pieces = [
        [column.split(), *(_parts(line[i]) for line in cells)] for i, column in enumerate(columns)
    ]
    widths = [max(len(part) for parts in column for part in parts) for column in pieces]
    spare = room - (3 * len(columns) - 1) - sum(widths)  # edges; padding and a rule between
    if spare < 0:
        return None
    # Where each column's lines can change: the length of every run of a cell's parts.
    steps = [
        sorted({len(" ".join(parts[a:b])) for parts in column
                for a in range(len(parts)) for b in range(a + 1, len(parts) + 1)})
        for column in pieces
    ]  # fmt: skip
    lines = [
        [len(_wrapped(parts, w)) for parts in column]
        for column, w in zip(pieces, widths, strict=True)
    ]

    def shape(counts: list[list[int]]) -> tuple[int, int]:
        rows = list(zip(*counts, strict=True))  # the header's, then each row's
        return sum(max(row) for row in rows), sum(map(sum, rows))

    while True:
        now = shape(lines)
        best: tuple[tuple[float, float], int, int, list[int]] | None = None
        for index, column in enumerate(pieces):
            for width in (s for s in steps[index] if widths[index] < s <= widths[index] + spare):
                counts = [len(_wrapped(parts, width)) for parts in column]
                after = shape([*lines[:index], counts, *lines[index + 1 :]])
                cost = width - widths[index]
                gain = ((now[0] - after[0]) / cost, (now[1] - after[1]) / cost)
                if after < now and (best is None or gain > best[0]):
                    best = (gain, index, width, counts)
        if best is None:
            return widths
        _, index, width, lines[index] = best
        spare -= width - widths[index]
        widths[index] = width


def _records(console: Console, columns: list[str], cells: list[list[str]]) -> None:
    """A table too wide for the terminal, one row at a time: its first cell, then each other
    column's name and value."""
    for line in cells:
        console.print(Text(line[0], style="bold"), overflow="fold")
        fields = Table.grid(padding=(0, 3), pad_edge=False)
        fields.add_column(no_wrap=True)
        fields.add_column(overflow="fold")
        for column, cell in zip(columns[1:], line[1:], strict=True):
            fields.add_row(column, cell)
        console.print(Padding(fields, (0, 0, 0, 2)))
    console.print()


def _results_by_task(tables: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The results of a task of one group (humaneval, a subset's task) as one table, a row per
    run; of a task of several (subsets and blends), a table per run, a row per group."""
    by_task: dict[str, dict[str, list[dict]]] = {}
    for title, rows in tables.items():
        task, _, group = title.partition(": ")
        for row in rows:
            named = {"group": group.removesuffix(" (the headline)")} if group else {}
            shown = named | {k: v for k, v in row.items() if k != "run"}
            by_task.setdefault(task, {}).setdefault(row["run"], []).append(shown)
    found: dict[str, list[dict]] = {}
    for task, runs in by_task.items():
        if all("group" not in row for rows in runs.values() for row in rows):
            found[task] = [{"run": run} | row for run, rows in runs.items() for row in rows]
        else:
            found |= runs
    return found


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f2f2f2; } td:first-child, th:first-child { text-align: left; }
td.files { white-space: normal; overflow-wrap: anywhere; min-width: 20em; text-align: left; }
.scroll { overflow-x: auto; } figure { margin: 1em 0 2em; } figcaption { color: #555; }
figure svg { max-width: 100%; height: auto; } p.lead { color: #444; max-width: 60em; }
"""


def html_table(rows: list[dict], name: str) -> str:
    if not rows:
        return f'<p id="table-{name}">(none)</p>'
    columns = _columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(_html_cell(c, r.get(c, "")) for c in columns) + "</tr>" for r in rows
    )
    return (
        f'<div class="scroll"><table id="table-{name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


# Columns of lists that wrap (anywhere): a run of shards names several long files, a variant
# gap's flips hundreds of task ids.
WRAPPED_COLUMNS = ("logs", "task ids")


def _html_cell(column: str, value: object) -> str:
    wrap = ' class="files"' if column in WRAPPED_COLUMNS else ""
    return f"<td{wrap}>{html.escape(str(value))}</td>"


def html_page(report: Report) -> str:
    plots = all_plots(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # Nothing may be fetched: no scripts, styles, fonts or images from anywhere.
        (
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'\">"
        ),
        f"<title>heval-inspect report</title><style>{STYLE}</style></head><body>",
        "<h1>heval-inspect report</h1>",
    ]
    if said := verdicts(report):
        parts.append(f"<h2>{VERDICTS}</h2><ul>")
        parts += [f"<li>{html.escape(sentence)}</li>" for sentence in said]
        parts.append("</ul>")
    for title, name, tables, text in SECTIONS:
        found = {subtitle: rows for subtitle, rows in _tables(tables, report).items() if rows}
        if not found:  # e.g. pass@1 by gap, of HumanEval alone: no section to show
            continue
        parts.append(f'<h2>{html.escape(title)}</h2><p class="lead">{html.escape(text)}</p>')
        for index, (subtitle, rows) in enumerate(found.items()):
            if subtitle:
                parts.append(f"<h3>{html.escape(subtitle)}</h3>")
            parts.append(html_table(rows, name if len(found) == 1 else f"{name}-{index + 1}"))
        if name == "results":
            parts += [_figure(plots, plot) for plot in ("pass1", "passk") if plot in plots]
        elif name == "differences" and "differences" in plots:
            parts.append(_figure(plots, "differences"))
        elif name == "failures":
            parts.append(_figure(plots, "failures"))
    if report.notes:
        parts.append("<h2>Notes</h2><ul>")
        parts += [f"<li>{html.escape(note)}</li>" for note in report.notes]
        parts.append("</ul>")
    parts.append(
        '<p class="lead">Intervals as in <code>heval_inspect/report/intervals.py</code>: '
        "Wilson (1927) on Kish's effective sample size, its end towards 0 or 1 as far as "
        "Jeffreys' (Brown, Cai and DasGupta 2001), Student's t on Satterthwaite's effective "
        "degrees of freedom; paired standard errors as in Miller (2024), Adding Error Bars to "
        "Evals, arXiv 2411.00640.</p></body></html>"
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
    # Every view made before any is written: a report that fails leaves no partial one behind.
    texts = {"markdown": markdown(report), "html": html_page(report)}
    for name, text in texts.items():
        files[name].write_text(text, encoding="utf-8")
    write_csv(files["results"], results_csv_rows(report))
    write_csv(files["differences"], differences_csv_rows(report))
    write_csv(files["failures"], failures_csv_rows(report))
    write_csv(files["gaps"], gaps_csv_rows(report))
    return files
