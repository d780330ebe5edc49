"""What a reader sees of a sample: the answer as code, the verdict first, the gap in context."""

import pytest

from heval_inspect.explanation import explain, fenced, gap_in_context, program_as_ran
from heval_inspect.schema import Cause, Execution

PROMPT = "def f(x):\n    '''Twice x.'''\n"
TESTS = "\n\ndef check(c):\n    assert c(2) == 4\n\ncheck(f)"


def program_with(middle: str, suffix: str = "") -> str:
    return PROMPT + middle + suffix + TESTS


def execution(status: str, cause: Cause, reason: str = "", error: str = "", cpu: float = 0.01,
              stderr: str = "") -> Execution:  # fmt: skip
    return Execution(status, cause, reason, 0, cpu, cpu, 0, stderr, {}, error=error)


def test_code_is_fenced_with_a_fence_longer_than_any_inside():
    assert fenced("x = 1\n", "python") == "```python\nx = 1\n```"
    assert fenced("x = 1", "python") == "```python\nx = 1\n```"
    assert fenced("", "python") == "```python\n```"
    assert fenced("s = '```'\n") == "````\ns = '```'\n````"


def test_the_model_lines_are_numbered_as_in_the_program_and_marked():
    middle = "    y = x\n    return 2 * y\n"
    context = gap_in_context(program_with(middle), len(PROMPT), len(middle))
    assert "(the model's code is lines 3-4, marked `+`)" in context
    assert "  2 |     '''Twice x.'''\n+ 3 |     y = x\n+ 4 |     return 2 * y\n  5 | \n" in context
    assert context.endswith("  7 | def check(c):\n```")  # three lines of context after
    assert "```diff\n  1 | def f(x):\n" in context


def test_a_gap_inside_a_line_gives_its_columns():
    prompt, middle, suffix = "def f(x):\n    return ", "2 *", " x\n"
    program = prompt + middle + suffix
    context = gap_in_context(program, len(prompt), len(middle))
    assert "(the model's code is line 2, column 12 to line 2, column 14, marked `+`)" in context
    assert "+ 2 |     return 2 * x" in context


def test_an_empty_answer_shows_where_the_gap_is():
    context = gap_in_context(program_with("", "    return 2 * x\n"), len(PROMPT), 0)
    assert "the model's code is empty; the gap is at line 3, column 1 (marked `>`)" in context
    assert "> 3 |     return 2 * x" in context and "+ " not in context


def test_a_long_answer_shows_its_ends_in_context():
    middle = "".join(f"    y{i} = {i}\n" for i in range(100)) + "    return 2 * x\n"
    context = gap_in_context(program_with(middle), len(PROMPT), len(middle))
    assert "+   3 |     y0 = 0" in context and "+ 103 |     return 2 * x" in context
    assert "... 61 more of the model's lines ..." in context and "y50 = 50" not in context


def test_explanation_leads_with_the_verdict_and_points_at_the_program():
    middle = "    return x + x\n"
    program = program_with(middle)
    text = explain(execution("passed", Cause.PASSED, cpu=0.0123), program, len(PROMPT), 14)
    assert text.startswith("**Verdict:** `passed` — the whole program ran to the end")
    assert "(0.01 s of CPU)" in text and "**stderr**" not in text
    assert text.endswith("The whole program, as it ran, is in the sample's transcript.")
    assert program_as_ran(program) == "**Program** (as it ran):\n\n" + fenced(program, "python")


def test_a_failure_shows_its_reason_and_the_tail_of_stderr():
    stderr = "".join(f"line {i}\n" for i in range(30)) + "NameError: name 'z' is not defined\n"
    failed = execution(
        "failed", Cause.NAME_ERROR, "name 'z' is not defined", "NameError", stderr=stderr
    )
    text = explain(failed, program_with("z\n"), 24, 2)
    assert text.startswith(
        "**Verdict:** `failed: name 'z' is not defined` — the program stopped with `NameError`"
    )
    assert "line 11\n" in text and "line 10\n" not in text  # the last 20 lines of stderr
    assert (
        text.index("**The gap in context**")
        < text.index("**stderr**")
        < text.index("The whole program")
    )


@pytest.mark.parametrize(
    "status, cause, reason, error, why",
    [
        ("timed out", Cause.TIME_LIMIT, "time limit of 3s", "",
         "the program was still running at its time limit"),
        ("failed", Cause.WRONG_ANSWER, "", "AssertionError",
         "an `assert` failed (`AssertionError`), usually one of the tests': a wrong answer."),
        ("failed", Cause.SYNTAX_ERROR, "invalid syntax (<string>, line 3)", "SyntaxError",
         "the program does not compile (`SyntaxError`)."),
        ("timed out", Cause.SIGNAL, "killed by signal SIGSEGV before the tests completed", "",
         "the program ended without reporting a result (killed by signal SIGSEGV"),
        ("timed out", Cause.EXIT, "exited with code 0 before the tests completed", "",
         "the program ended without reporting a result (exited with code 0"),
        ("failed", Cause.MEMORY, "", "MemoryError",
         "the program stopped with `MemoryError` before its tests finished."),
    ],
)  # fmt: skip
def test_the_verdict_says_why_by_its_cause(status, cause, reason, error, why):
    text = explain(execution(status, cause, reason, error), program_with("x\n"), 24, 2)
    first = text.split("\n", 1)[0]
    assert first.split(" — ", 1)[1].startswith(why), first
