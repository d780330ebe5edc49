"""Inspect AI tasks for HumanEval and HumanEval-Infilling, scored in a hardened Docker sandbox."""

from ._registry import (
    KTooLargeWarning,
    SandboxImages,
    humaneval,
    humaneval_infilling,
    humaneval_metrics,
    humaneval_multi_line_infilling,
    humaneval_random_span_infilling,
    humaneval_random_span_infilling_light,
    humaneval_single_line_infilling,
    infill_chat,
    infill_fim,
    reference,
    replay,
    unit_tests,
)

__all__ = [
    "KTooLargeWarning",
    "SandboxImages",
    "humaneval",
    "humaneval_infilling",
    "humaneval_metrics",
    "humaneval_multi_line_infilling",
    "humaneval_random_span_infilling",
    "humaneval_random_span_infilling_light",
    "humaneval_single_line_infilling",
    "infill_chat",
    "infill_fim",
    "reference",
    "replay",
    "unit_tests",
]
