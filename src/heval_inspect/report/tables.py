"""The report's tables, made once from the `Report` for every view: each a list of rows (dicts of
column name to text or number), by section, with each section's title and explanation.
"""

import math
from collections.abc import Callable
from pathlib import Path

from .build import Report
from .failures import KINDS
from .numbers import number, p_value
from .stats import Figure, Results

HEADLINE = "sample_weighted"
# The first section, where the report has comparisons: each one's verdict in a sentence.
VERDICTS = "Verdicts"


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


def columns_of(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(key for row in rows for key in row))


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


def tables_of(tables: "Tables | tuple[Tables, ...]", report: Report) -> dict[str, list[dict]]:
    """A section's tables by their titles ("" for a table of no title of its own)."""
    if isinstance(tables, tuple):
        return {title: rows for each in tables for title, rows in tables_of(each, report).items()}
    return tables(report)
