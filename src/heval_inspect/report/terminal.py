"""The report in the terminal: every section's tables as wide as the terminal allows (up to 100
columns), no name cut and no figure broken.
"""

import os
import re

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .build import Report
from .tables import SECTIONS, VERDICTS, columns_of, tables_of
from .verdicts import verdicts

TERMINAL_WIDTH = 100


# What the terminal leaves out to fit its width: in the Markdown and HTML views and the CSV files.
TERMINAL_OMITS = {
    "runs": ("logs",), "results": ("epochs",), "differences": ("SE", "task ids"),
}  # fmt: skip


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
        found = {t: rows for t, rows in tables_of(tables, report).items() if rows}
        if name == "results":
            found = _results_by_task(found)
        if not found:
            continue
        console.rule(f"[bold]{title}", align="left")
        for subtitle, rows in found.items():
            columns = [c for c in columns_of(rows) if c not in TERMINAL_OMITS.get(name, ())]
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
