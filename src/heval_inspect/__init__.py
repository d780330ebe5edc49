"""Inspect AI tasks for HumanEval and HumanEval-Infilling, scored in a hardened Docker sandbox.

Inspect's entry point: importing the package registers its tasks, solvers, scorers, hooks and the
heval_pool sandbox.
"""

from .metrics import KTooLargeWarning, humaneval_metrics
from .provenance import SandboxImages
from .sandbox.pool import PoolSandboxEnvironment  # noqa: F401  (registers the heval_pool sandbox)
from .scorer import unit_tests
from .solvers import infill_chat, infill_fim, reference, replay
from .tasks import (
    humaneval,
    humaneval_infilling,
    humaneval_multi_line_infilling,
    humaneval_random_span_infilling,
    humaneval_random_span_infilling_light,
    humaneval_single_line_infilling,
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
