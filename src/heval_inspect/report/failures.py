"""Why programs fail: each verdict's kind, and pass@1 by the shape of the gap.

Kinds, from the score's metadata (`verdict`, `reason`, and `error`, the class of the exception
that ended the program):

| kind | when |
| --- | --- |
| passed | the verdict is `passed` |
| wrong answer | an `AssertionError`: a test's assertion failed |
| syntax error | `SyntaxError`, `IndentationError` or `TabError`: the program does not compile |
| name error | `NameError` or `UnboundLocalError` |
| memory | `MemoryError`, or killed by the container's out-of-memory killer |
| other runtime error | any other exception (`TypeError`, `SystemExit`, ...), or an exit before
  the tests completed |
| timed out | its time limit ran out |
| killed | it died by a signal (`killed by signal SIGSEGV ...`), or its executor was lost |
| no verdict | the sample ended in an error (the infrastructure's, never the model's) |

Logs written before the exception's class was recorded (no `error` in the score metadata) are
classified by the reason's text instead: an empty reason is a wrong answer (HumanEval's
assertions have no message), Python's messages for syntax and indentation errors and for unknown
names are recognised, and everything else is another runtime error. That is right for the
canonical tests' failures, but a test assertion with a message, or an exception raised without
one, can land in the wrong kind.
"""

import os
import re
from pathlib import Path

import numpy as np

from ..data import DATA_DIR_ENV, HUMANEVAL, SUBSETS, read_problems, sha256_of
from ..host import cache_dir

KINDS = (
    "passed",
    "wrong answer",
    "syntax error",
    "name error",
    "other runtime error",
    "timed out",
    "memory",
    "killed",
    "no verdict",
)
SYNTAX_ERRORS = {"SyntaxError", "IndentationError", "TabError"}
NAME_ERRORS = {"NameError", "UnboundLocalError"}
OUT_OF_MEMORY = "out-of-memory killer"
# Python's messages, for logs without the exception's class.
SYNTAX_MESSAGES = re.compile(
    r"invalid syntax|\(<string>, line \d+\)|unexpected indent|expected an indented block|"
    r"unindent does not match|inconsistent use of tabs|was never closed|unterminated string|"
    r"unmatched '|EOF while scanning|EOL while scanning|invalid character|"
    r"unexpected EOF while parsing"
)
NAME_MESSAGES = re.compile(
    r"^name '.*' is not defined|referenced before assignment|cannot access local variable"
)


def kind(verdict: str, reason: str, error: str | None) -> str:
    """The kind of one verdict (see the module's docstring)."""
    if verdict == "passed":
        return "passed"
    if verdict == "timed out":
        if reason.startswith("time limit"):
            return "timed out"
        if OUT_OF_MEMORY in reason:
            return "memory"
        if reason.startswith("exited with code"):
            return "other runtime error"
        return "killed"
    if not verdict.startswith("failed"):
        return "no verdict"
    if error is None:
        return _kind_from_message(reason)
    if error == "AssertionError":
        return "wrong answer"
    if error in SYNTAX_ERRORS:
        return "syntax error"
    if error in NAME_ERRORS:
        return "name error"
    if error == "MemoryError":
        return "memory"
    return "other runtime error"


def _kind_from_message(reason: str) -> str:
    if not reason.strip():
        return "wrong answer"
    if SYNTAX_MESSAGES.search(reason):
        return "syntax error"
    if NAME_MESSAGES.search(reason):
        return "name error"
    return "other runtime error"


def kinds(verdicts: list[str], reasons: list[str], errors: list[str | None]) -> np.ndarray:
    return np.array(
        [kind(v, r, e) for v, r, e in zip(verdicts, reasons, errors, strict=True)], dtype=object
    )


def gap_lines(span: str) -> int:
    """How many lines of the program the gap's canonical code touches (0 for an empty gap)."""
    if not span:
        return 0
    return span.count("\n") + (0 if span.endswith("\n") else 1)


GAP_BUCKETS = ((0, 0, "0 (empty)"), (1, 1, "1"), (2, 2, "2"), (3, 4, "3-4"), (5, 8, "5-8"),
               (9, 10**9, "9+"))  # fmt: skip


def gap_bucket(lines: int) -> str:
    return next(name for low, high, name in GAP_BUCKETS if low <= lines <= high)


def mid_line(prompt: str, span: str, suffix: str) -> tuple[bool, bool]:
    """Whether a gap starts in the middle of a line (after code or indentation on its line), and
    whether it ends in the middle of one (code of its line follows it)."""
    starts = bool(prompt) and not prompt.endswith("\n")
    ends = (
        bool(suffix)
        and not suffix.startswith("\n")
        and bool(prompt + span)
        and not (prompt + span).endswith("\n")
    )
    return starts, ends


def problem_texts(problem_files: list[dict]) -> dict[str, tuple[str, str]] | None:
    """Each task's prompt and suffix, from the problem files a log names (its provenance), when
    they are on this machine: at the recorded path, or (official files) in $HEVAL_DATA_DIR or the
    download cache, always with the recorded SHA-256. None when one cannot be found, or when the
    log names none (it is older than its task's version 1)."""
    if not problem_files:
        return None
    texts: dict[str, tuple[str, str]] = {}
    for file in problem_files:
        path = _find(file)
        if path is None:
            return None
        for record in read_problems(path):
            texts[record["task_id"]] = (record["prompt"], record.get("suffix", ""))
    return texts


def _find(file: dict) -> Path | None:
    candidates = [Path(file.get("path", ""))]
    official = [f for f in (HUMANEVAL, *SUBSETS.values()) if f.sha256 == file.get("sha256")]
    local = os.environ.get(DATA_DIR_ENV)
    for each in official:
        if local:
            candidates += [Path(local) / each.folder / each.filename, Path(local) / each.filename]
        candidates.append(cache_dir() / each.folder / each.filename)
    for candidate in candidates:
        if candidate.is_file() and sha256_of(candidate) == file.get("sha256"):
            return candidate
    return None
