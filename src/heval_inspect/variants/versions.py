"""The variants this version builds, the generator's version that logs record, and the
checked `-T variant` argument.
"""

from dataclasses import dataclass
from typing import Any

from ..errors import DataError, TaskArgumentError
from ..schema import ORIGINAL, ORIGINAL_VARIANT, VariantId

VARIANTS = (ORIGINAL, "renamed", "reformatted")
# Goes up whenever a variant's text for some task changes: logs record it (and sources name it)
# so that a log is re-scored against the very variant its answers were written for.
GENERATOR_VERSION = 2


class VariantError(DataError):
    """A problem's variant cannot be built (its program does not parse, say)."""


@dataclass(frozen=True)
class Variant:
    """A task's problem record as a variant, and what it changed."""

    record: dict
    renames: dict[str, str]  # original name -> new name (renamed; empty otherwise)
    identifiers: int  # distinct identifiers renamed
    tokens: int  # tokens of prompt + gap + suffix whose text or layout before them changed


def check_variant(variant: Any) -> VariantId:
    """The variant argument, checked (one of VARIANTS): the variant this version builds."""
    if variant not in VARIANTS:
        raise TaskArgumentError(
            f"variant={variant!r}: choose from {', '.join(VARIANTS)} (e.g. -T variant=renamed)."
        )
    return ORIGINAL_VARIANT if variant == ORIGINAL else VariantId(str(variant), GENERATOR_VERSION)
