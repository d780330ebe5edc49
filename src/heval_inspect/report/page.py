"""The report as one self-contained HTML page: its style and its plots (inline SVG) held in it,
nothing loaded from the network or from disk.
"""

import html

from .build import Report
from .plots import all_plots
from .tables import SECTIONS, VERDICTS, columns_of, tables_of
from .verdicts import verdicts

CAPTIONS = {
    "pass1": "pass@1 of each run per subset and blend; bars: 95% intervals (clustered by problem).",
    "passk": "pass@k against k over all of each run's tasks, for every k its epochs allow.",
    "failures": "Share of each kind of verdict, per run and subset.",
    "differences": "Paired differences in pass@1 (run minus baseline) with 95% intervals.",
}


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
    columns = columns_of(rows)
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
        found = {subtitle: rows for subtitle, rows in tables_of(tables, report).items() if rows}
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
