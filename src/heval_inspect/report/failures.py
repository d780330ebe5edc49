"""Why programs fail: each verdict's kind, and pass@1 by the shape of the gap.

Kinds, from the cause the executor recorded in each score's metadata (`schema.Cause`):

| kind | causes |
| --- | --- |
| passed | passed |
| wrong answer | an `AssertionError`: a test's assertion failed |
| syntax error | `SyntaxError`, `IndentationError` or `TabError`: the program does not compile |
| name error | `NameError` or `UnboundLocalError` |
| memory | `MemoryError`, or killed by the container's out-of-memory killer |
| other runtime error | any other exception (`TypeError`, `SystemExit`, ...), or an exit before
  the tests completed |
| timed out | its time limit ran out |
| killed | it died by a signal (`killed by signal SIGSEGV ...`), or its executor was lost |
| no verdict | the sample ended in an error (the infrastructure's, never the model's) |
"""

from pathlib import Path

import numpy as np

from ..data import official_copies, read_problems, sha256_of
from ..schema import Cause, DataFile

KIND_OF_CAUSE = {
    Cause.PASSED: "passed",
    Cause.WRONG_ANSWER: "wrong answer",
    Cause.SYNTAX_ERROR: "syntax error",
    Cause.NAME_ERROR: "name error",
    Cause.EXCEPTION: "other runtime error",
    Cause.EXIT: "other runtime error",
    Cause.TIME_LIMIT: "timed out",
    Cause.MEMORY: "memory",
    Cause.SIGNAL: "killed",
    Cause.EXECUTOR_LOST: "killed",
}
KINDS = (*dict.fromkeys(KIND_OF_CAUSE.values()), "no verdict")


def kinds(causes: np.ndarray) -> np.ndarray:
    """The kind of each verdict, from its cause."""
    return np.array([KIND_OF_CAUSE[Cause(cause)] for cause in causes], dtype=object)


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


def problem_texts(problem_files: list[DataFile]) -> dict[str, tuple[str, str]] | None:
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


def _find(file: DataFile) -> Path | None:
    for candidate in [Path(file.path), *official_copies(file.sha256)]:
        if candidate.is_file() and sha256_of(candidate) == file.sha256:
            return candidate
    return None
