"""Inspect AI tasks for HumanEval and HumanEval-Infilling, scored in a hardened Docker sandbox."""

from ._registry import *
from ._registry import __all__  # noqa: F401
