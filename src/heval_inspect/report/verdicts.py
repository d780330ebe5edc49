"""Each comparison's verdict in one sentence, the report's first section: who is better, by how
many points of the headline figure, how surely; or that the runs cannot be told apart."""

import math

from .build import Report
from .numbers import number, p_value
from .stats import Comparison, Difference


def verdicts(report: Report) -> list[str]:
    """Each comparison's verdict in one sentence, on its headline figure: the first pass@k (the
    smallest k) of the headline group, as the task's log leads with it."""
    return [verdict(c) for c in report.comparisons if c.differences]


def _points(value: float) -> str:
    return number(100 * value, 1)


def verdict(c: Comparison) -> str:
    """Who won, by how much, and how surely; or that the runs cannot be told apart, and what
    difference their tasks could have shown."""
    d = c.differences[0]
    on = c.other.task if d.group in ("", c.other.task) else f"{c.other.task} ({d.group})"
    p = p_value(d.p_value)
    chance = f"p {p}" if p.startswith("<") else f"p = {p}"
    told_apart = not math.isnan(d.low) and (d.low > 0 or d.high < 0)
    if c.variant_gap:
        variant, run = c.other.variant.name, c.other.name
        if told_apart:
            moves = "costs" if d.difference < 0 else "gains"
            return (
                f"{variant} {moves} {run} {_points(abs(d.difference))} points of {d.figure} on "
                f"{on} (the variant minus the original: {_difference(d)}); a gap this large "
                f"would arise by chance with {chance}."
            )
        return (
            f"{variant} changes {run}'s {d.figure} on {on} by no amount these {d.tasks} tasks can "
            f"tell from chance: {_difference(d)} points ({chance})" + _detectable(d, "gap")
        )
    other, baseline = _names(c)
    if told_apart:
        better = "better" if d.difference > 0 else "worse"
        return (
            f"{other} is {better} than {baseline} on {on} by {_points(abs(d.difference))} "
            f"points of {d.figure} ({other} minus {baseline}: {_difference(d)}); a difference "
            f"this large would arise by chance with {chance}."
        )
    return (
        f"{other} and {baseline} cannot be told apart on {on}: {other} minus {baseline} is "
        f"{_difference(d)} points of {d.figure} ({chance})" + _detectable(d, "difference")
    )


def _detectable(d: Difference, what: str) -> str:
    """The end of a sentence on runs that cannot be told apart: the smallest difference their
    tasks would detect, or, where no task differs, that (there is no spread to size it from)."""
    if d.other_better == d.baseline_better == 0:
        return f"; no task's {d.figure} differs between them."
    return (
        f"; the smallest {what} these {d.tasks} tasks would detect is about "
        f"{_points(d.minimum_detectable)} points (80% power)."
    )


def _difference(d: Difference) -> str:
    """The difference in points, signed, with its 95% interval."""
    if math.isnan(d.low):
        return f"{100 * d.difference:+.1f} (one problem: no interval)"
    return f"{100 * d.difference:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"


def _names(c: Comparison) -> tuple[str, str]:
    """What tells the two runs apart in a sentence: their names, else their full labels."""
    if c.other.name != c.baseline.name:
        return c.other.name, c.baseline.name
    return c.other.label, c.baseline.label
