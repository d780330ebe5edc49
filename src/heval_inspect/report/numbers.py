"""How the report writes a number and a p-value, in every view and sentence."""

import math


def number(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    shown = f"{value:.{digits}f}"
    # A figure that rounds to 0 (a difference of -1e-17) has no sign.
    return shown.removeprefix("-") if float(shown) == 0 else shown


def p_value(value: float | None) -> str:
    """Two significant digits, and `<0.001` below 0.001."""
    if value is None or math.isnan(value):
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:#.2g}".rstrip(".")
