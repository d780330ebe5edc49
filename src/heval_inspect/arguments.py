"""Checks of the task and scorer arguments that are plain values, before any sample runs.

`inspect eval -T name=value` (and `inspect score -S`) reads each value as YAML: `3` is an int,
`2.5` a float, `true`/`false` a bool, `.nan` a float, anything else a string. Each check refuses a
value of the wrong type or range with one line saying what is accepted; the arguments that name
a choice (subsets, k, fim_format, sandbox, shard) are checked where they are parsed.
"""

import math
from typing import Any

from .errors import TaskArgumentError
from .sandbox import CONTAINER_MEMORY_MIB, DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT

# Above an hour a program is not a unit test any more; a typo (timeout=3000) should not turn a
# hanging program into an hour-long sample unnoticed.
MAX_TIMEOUT = 3600.0
# Below this, Python itself cannot start in the sandbox.
MIN_MEMORY_MIB = 64


def check_timeout(timeout: Any) -> None:
    if not _is_number(timeout) or not 0 < timeout <= MAX_TIMEOUT:
        raise TaskArgumentError(
            f"timeout={timeout!r}: give the seconds each program may run, a number above 0 and "
            f"at most {MAX_TIMEOUT:g} (e.g. -T timeout=10); the default is {DEFAULT_TIMEOUT:g}."
        )


def check_memory_limit(memory_limit: Any) -> None:
    if (
        not isinstance(memory_limit, int)
        or isinstance(memory_limit, bool)
        or not MIN_MEMORY_MIB <= memory_limit <= CONTAINER_MEMORY_MIB
    ):
        raise TaskArgumentError(
            f"memory_limit={memory_limit!r}: give whole MiB from {MIN_MEMORY_MIB} (the "
            f"interpreter's own needs) to {CONTAINER_MEMORY_MIB} (what the sandbox container "
            f"leaves to programs), e.g. -T memory_limit=512; the default is {DEFAULT_MEMORY_MIB}."
        )


def check_flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TaskArgumentError(f"{name}={value!r}: give true or false (e.g. -T {name}=true).")


def check_path(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise TaskArgumentError(f"{name}={value!r}: give the path of a file or folder.")


def check_name(name: str, value: Any, choices: str) -> None:
    if not isinstance(value, str):
        raise TaskArgumentError(f"{name}={value!r}: give one of {choices}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
