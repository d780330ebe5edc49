"""What a reader sees of a sample in `inspect view`: the answer as code, and an explanation.

The explanation leads with the verdict (the reference harness's words) and why, then shows the gap
in its context (a few lines around it, numbered as in the program, the model's lines marked `+`),
then the tail of the program's stderr. The whole program that ran goes into the sample's
transcript instead (`program_as_ran`): Inspect keeps every score, explanation included, until the
run ends, and a transcript event only until the sample is written to the log. Everything is
Markdown, built from text by pure functions.
"""

import re

from .schema import Cause, Execution

# Lines of the program shown before and after the model's code.
CONTEXT_LINES = 3
# A longer answer shows its first and last lines in context (the program below has them all).
MAX_MODEL_LINES = 40
STDERR_LINES = 20


def fenced(code: str, language: str = "") -> str:
    """Code as a Markdown fenced block, its fence longer than any run of backticks inside."""
    longest = max((len(run) for run in re.findall("`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    body = code if code.endswith("\n") or not code else code + "\n"
    return f"{fence}{language}\n{body}{fence}"


def explain(execution: Execution, program: str, gap_start: int, gap_length: int) -> str:
    """The explanation of one verdict; the gap is program[gap_start : gap_start + gap_length]."""
    parts = [verdict_line(execution), gap_in_context(program, gap_start, gap_length)]
    lines = execution.stderr_tail.rstrip("\n").splitlines()[-STDERR_LINES:]
    if any(line.strip() for line in lines):
        parts.append("**stderr** (its last lines):\n\n" + fenced("\n".join(lines)))
    parts.append("The whole program, as it ran, is in the sample's transcript.")
    return "\n\n".join(parts)


def program_as_ran(program: str) -> str:
    """The whole program, tests included, as the sample's transcript shows it."""
    return "**Program** (as it ran):\n\n" + fenced(program, "python")


def verdict_line(execution: Execution) -> str:
    """The verdict, as the reference harness writes it, and why in plain words (by its cause)."""
    cause, error = execution.cause, _inline_code(execution.error or "an exception")
    if cause == Cause.PASSED:
        why = (
            "the whole program ran to the end, tests included "
            f"({execution.cpu_seconds:.2f} s of CPU)."
        )
    elif cause == Cause.TIME_LIMIT:
        why = (
            "the program was still running at its time limit (its own time: waits for a CPU do "
            "not count)."
        )
    elif execution.status == "timed out":
        why = (
            f"the program ended without reporting a result ({execution.reason}), which the "
            "reference harness reports as timed out."
        )
    elif cause == Cause.WRONG_ANSWER:
        why = f"an `assert` failed ({error}), usually one of the tests': a wrong answer."
    elif cause == Cause.SYNTAX_ERROR:
        why = f"the program does not compile ({error})."
    else:
        why = f"the program stopped with {error} before its tests finished."
    return f"**Verdict:** {_inline_code(execution.verdict)} — {why}"


def gap_in_context(program: str, start: int, length: int) -> str:
    """The lines around the gap, numbered as in the program, the model's lines marked `+`."""
    lines = program.split("\n")
    first_line = program.count("\n", 0, start)
    first_column = start - (program.rfind("\n", 0, start) + 1)
    if length == 0:
        last_line = first_line
        where = (
            f"the model's code is empty; the gap is at line {first_line + 1}, column "
            f"{first_column + 1} (marked `>`)"
        )
        marker = ">"
    else:
        end = start + length  # one past the model's last character
        last_line = program.count("\n", 0, end - 1)
        ends_line = program[end - 1] == "\n" or end == len(program) or program[end] == "\n"
        if first_column == 0 and ends_line and first_line == last_line:
            span = f"line {first_line + 1}"
        elif first_column == 0 and ends_line:
            span = f"lines {first_line + 1}-{last_line + 1}"
        else:
            last_column = end - (program.rfind("\n", 0, end - 1) + 1)
            span = (
                f"line {first_line + 1}, column {first_column + 1} to line {last_line + 1}, "
                f"column {last_column}"
            )
        where = f"the model's code is {span}, marked `+`"
        marker = "+"
    shown = list(range(max(0, first_line - CONTEXT_LINES), first_line))
    model = list(range(first_line, last_line + 1))
    if len(model) > MAX_MODEL_LINES:
        half = MAX_MODEL_LINES // 2
        model = model[:half] + [-1] + model[-half:]
    shown += model + list(range(last_line + 1, min(len(lines), last_line + 1 + CONTEXT_LINES)))
    width = len(str(max(shown) + 1))
    rows = []
    for number in shown:
        if number < 0:
            hidden = last_line - first_line + 1 - 2 * (MAX_MODEL_LINES // 2)
            rows.append(f"{marker} {'':>{width}} | ... {hidden} more of the model's lines ...")
            continue
        mark = marker if first_line <= number <= last_line else " "
        rows.append(f"{mark} {number + 1:>{width}} | {lines[number]}")
    return f"**The gap in context** ({where}):\n\n" + fenced("\n".join(rows), "diff")


def _inline_code(text: str) -> str:
    """Text as a Markdown code span (which shows it as it is), whatever backticks it holds."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
