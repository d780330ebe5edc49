"""Inspect AI tasks for HumanEval and HumanEval-Infilling, scored in a hardened Docker sandbox.

Inspect's entry point: importing the package registers its tasks, solvers, scorers, hooks, the
heval_pool sandbox and the model providers of the FIM endpoints that take a suffix
(fim_services.py).
"""

from . import fim_services  # noqa: F401  (registers the FIM endpoints' providers)
from .fim_endpoints import FimRequest
from .metrics import KTooLargeWarning, humaneval_metrics
from .provenance import SandboxImages
from .sandbox.pool_sandbox import PoolSandboxEnvironment  # noqa: F401  (registers heval_pool)
from .scorer import unit_tests
from .solvers import infill_chat, infill_fim, reference, replay
from .suffix_solvers import infill, infill_suffix
from .tasks import (
    humaneval,
    humaneval_infilling,
    humaneval_multi_line_infilling,
    humaneval_random_span_infilling,
    humaneval_random_span_infilling_light,
    humaneval_single_line_infilling,
)

__all__ = [
    "FimRequest",
    "KTooLargeWarning",
    "SandboxImages",
    "humaneval",
    "humaneval_infilling",
    "humaneval_metrics",
    "humaneval_multi_line_infilling",
    "humaneval_random_span_infilling",
    "humaneval_random_span_infilling_light",
    "humaneval_single_line_infilling",
    "infill",
    "infill_chat",
    "infill_fim",
    "infill_suffix",
    "reference",
    "replay",
    "unit_tests",
]
