"""Answer extraction and FIM prompts, on every task of the real data files. No sandbox needed."""

import ast
from collections import Counter

import pytest

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.extract import middle_from_chat, middle_from_fim
from heval_inspect.prompts import FIM_FORMATS, fim_format, fim_prompt
from heval_inspect.testing.perfect_model import CHAT_STYLES, chat_answer, fim_answer

EXACT_STYLES = [name for name, style in CHAT_STYLES.items() if style.exact]
INEXACT_STYLES = [name for name, style in CHAT_STYLES.items() if not style.exact]


@pytest.fixture(scope="module")
def every_task() -> list[dict]:
    """All 8,652 infilling tasks and the 164 HumanEval problems (suffix empty)."""
    files = [*SUBSETS.values(), HUMANEVAL]
    records = [record for file in files for record in load_official(file)]
    assert len(records) == 8816
    return records


def gap(record: dict) -> tuple[str, str, str]:
    return record["prompt"], record["canonical_solution"], record.get("suffix", "")


def per_subset(task_ids: list[str]) -> dict[str, int]:
    """How many of the task ids each subset (the id's first part: `RandomSpanInfilling`, ...)
    has."""
    return dict(Counter(task_id.split("/")[0] for task_id in task_ids))


def same_syntax_tree(program: str, canonical: str) -> bool:
    try:
        return ast.dump(ast.parse(program)) == ast.dump(ast.parse(canonical))
    except SyntaxError:
        return False


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("style", EXACT_STYLES)
def test_each_chat_style_gives_back_the_canonical_span_of_every_task(style, every_task):
    wrong = []
    for record in every_task:
        prefix, middle, suffix = gap(record)
        answer = chat_answer(CHAT_STYLES[style], prefix, middle, suffix)
        if middle_from_chat(answer, prefix, suffix) != middle:
            wrong.append(record["task_id"])
    assert per_subset(wrong) == {}, wrong[:5]


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("style", INEXACT_STYLES)
def test_answers_without_their_final_line_break_give_the_canonical_program(style, every_task):
    # Exactly the canonical program, up to line breaks that Python ignores (same syntax tree).
    wrong, exact = [], 0
    for record in every_task:
        prefix, middle, suffix = gap(record)
        answer = chat_answer(CHAT_STYLES[style], prefix, middle, suffix)
        extracted = middle_from_chat(answer, prefix, suffix)
        if extracted == middle:
            exact += 1
        elif not same_syntax_tree(prefix + extracted + suffix, prefix + middle + suffix):
            wrong.append(record["task_id"])
    assert per_subset(wrong) == {}, wrong[:5]
    assert exact > 8000  # the rest differ by a line break the answer could not show


@pytest.mark.data
@pytest.mark.parametrize("family", FIM_FORMATS)
def test_each_fim_completion_is_cut_at_its_stop_token(family, every_task):
    row = FIM_FORMATS[family]
    wrong = [
        record["task_id"]
        for record in every_task
        if middle_from_fim(fim_answer(row, record["canonical_solution"]), row.stop)
        != record["canonical_solution"]
    ]
    assert wrong == []
    for stop in row.stop:
        assert (
            middle_from_fim(f"    return x\n{stop}junk{row.stop[0]}", row.stop) == "    return x\n"
        )


def test_fim_completion_without_a_stop_token_is_kept_whole():
    assert middle_from_fim("    return x  \n", FIM_FORMATS["starcoder"].stop) == "    return x  \n"


# Each family's prompt for prefix "P" and suffix "S", written out by hand from its source.
DOCUMENTED_LAYOUTS = {
    "starcoder": ("<fim_prefix>P<fim_suffix>S<fim_middle>", "PSM", "<|endoftext|>"),
    "santacoder": ("<fim-prefix>P<fim-suffix>S<fim-middle>", "PSM", "<|endoftext|>"),
    "codellama": ("<PRE> P <SUF>S <MID>", "PSM", "<EOT>"),
    "codellama_spm": ("<PRE> <SUF>S <MID> P", "SPM", "<EOT>"),
    "deepseek": (
        "<｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜>",
        "PSM",
        "<｜end▁of▁sentence｜>",
    ),
    "qwen2.5-coder": ("<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>", "PSM", "<|endoftext|>"),
    "codegemma": ("<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>", "PSM", "<|file_separator|>"),
    "codestral": ("[SUFFIX]S[PREFIX]P", "SPM", "</s>"),
    "incoder": ("P<|mask:0|>S<|mask:1|><|mask:0|>", "PSM", "<|endofmask|>"),
}


def test_every_family_is_documented_here():
    assert set(DOCUMENTED_LAYOUTS) == set(FIM_FORMATS)


@pytest.mark.parametrize("family", DOCUMENTED_LAYOUTS)
def test_fim_prompt_has_the_familys_documented_layout(family):
    layout, order, first_stop = DOCUMENTED_LAYOUTS[family]
    row = fim_format(family)
    assert fim_prompt(row, "P", "S") == layout
    assert row.order == order
    assert row.stop[0] == first_stop
    assert row.source  # every row says where its format comes from


def test_deepseek_tokens_use_full_width_bars_and_the_sentencepiece_space():
    prompt = fim_prompt(FIM_FORMATS["deepseek"], "P", "S")
    assert prompt == "<｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜>"
    assert "\uff5c" in prompt and "\u2581" in prompt and "|" not in prompt and "_" not in prompt


def test_fim_prompt_keeps_code_with_braces_and_tokens_intact():
    prefix, suffix = "def f():\n    return {'a': '{prefix}'}[", "]\n"
    assert fim_prompt(FIM_FORMATS["starcoder"], prefix, suffix) == (
        f"<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>"
    )


def test_unknown_fim_format_names_the_valid_ones():
    with pytest.raises(ValueError, match="Unknown fim_format 'starcoder3'.*starcoder, santacoder"):
        fim_format("starcoder3")


# Messy answers, each with the code around the gap it answers.
HAS_CLOSE = "def f(xs):\n    for x in xs:\n"
AFTER = "    return False\n"


@pytest.mark.parametrize(
    "answer, prefix, suffix, middle",
    [
        # prose around a fence; the tag in any case
        ("Sure!\n```Python\n        if x: return True\n```\nDone.", HAS_CLOSE, AFTER, None),
        # a block of another language first: the python block is the code
        ("```text\nnot code\n```\n```py\n        if x: return True\n```", HAS_CLOSE, AFTER, None),
        # no python block at all: the first block
        ("```text\n        if x: return True\n```", HAS_CLOSE, AFTER, None),
        # CRLF, an unclosed fence
        ("```python\r\n        if x: return True\r\n", HAS_CLOSE, AFTER, None),
        # a lone </think> (the opening tag was consumed by the server), then a fence
        ("plan```\n</think>\n```python\n        if x: return True\n```", HAS_CLOSE, AFTER, None),
        # unfenced after a think block
        ("<think>x</think>\n\n        if x: return True", HAS_CLOSE, AFTER, None),
        # repeats the line before the gap, and the line after it
        (
            "```python\n    for x in xs:\n        if x: return True\n    return False\n```",
            HAS_CLOSE,
            AFTER,
            None,
        ),
        # the gap starts after indentation; the answer restarts the line with full indentation
        (
            "```python\n        if y: return True\n```",
            HAS_CLOSE + "        y = x\n        ",
            AFTER,
            "if y: return True\n",
        ),
        # an empty gap: an empty fence
        ("```python\n```", "x = [1, ", "2]\n", ""),
        ("The gap is empty.\n\n```python\n\n```", "x = [1, ", "2]\n", ""),
        # a mid-line gap with the closing fence right after the code
        ("```python\n2, ```", "x = [1, ", "3]\n", "2, "),
    ],
)
def test_messy_chat_answers(answer, prefix, suffix, middle):
    expected = "        if x: return True\n" if middle is None else middle
    assert middle_from_chat(answer, prefix, suffix) == expected


# An answer cut off inside a one-line string: the code is open there, so no line break is added,
# and nothing after the quote is read as code. Under every Python alike: from 3.12 on the
# tokenizer stops at such a string, where 3.11's went on past it.
@pytest.mark.parametrize("quote", ["'", '"', "b'", "f'", 'r"'])
@pytest.mark.parametrize("fence", ["", "```python\n"])
def test_an_answer_cut_off_inside_a_string_is_read_alike_under_every_python(quote, fence):
    prefix = 'def greet(name):\n    """Greet name."""\n'
    cut = f"    greeting = {quote}Hello, "
    assert middle_from_chat(fence + cut, prefix, "    return greeting + name\n") == cut


HUMANEVAL_PROMPT = (
    "from typing import List\n\n\ndef total(xs: List[int]) -> int:\n"
    '    """Sum of xs.\n    >>> total([1, 2])\n    3\n    """\n'
)
BODY = "    result = 0\n    for x in xs:\n        result += x\n    return result\n"


@pytest.mark.parametrize(
    "answer",
    [
        f"```python\n{BODY}```",  # the body
        f"```python\n{HUMANEVAL_PROMPT}{BODY}```",  # the whole function, as given
        f"```python\ndef total(xs: List[int]) -> int:\n{BODY}```",  # no docstring, no import
        # the function with a docstring of its own, after an import
        f"Here:\n```python\nfrom typing import List\n\n"
        f'def total(xs: List[int]) -> int:\n    """Add."""\n{BODY}```',
        BODY.rstrip("\n"),  # unfenced, the final line break dropped by the API
        # the signature wrapped as a formatter wraps it, and a docstring of its own
        f'```python\ndef total(\n    xs: List[int],\n) -> int:\n    """Add them up."""\n{BODY}```',
    ],
)
def test_humaneval_answer_with_body_or_whole_function_gives_the_body(answer):
    assert middle_from_chat(answer, HUMANEVAL_PROMPT, "") == BODY


def test_middle_is_never_stripped():
    answer = "```python\n  \t weird   \n```"
    assert middle_from_chat(answer, "x = (\n", "\n)\n") == "  \t weird   "


def test_what_the_body_needs_after_the_function_stays_and_usage_code_goes():
    body = "    return sum(double(x) for x in xs) // SCALE\n"
    needed = [
        "import functools\n\n\n",  # used by the helper's decorator
        "@functools.cache\ndef double(x: int) -> int:\n    return 2 * x\n\n\n",
        "SCALE = 2\n\n\n",
    ]
    usage = ["def main():\n    print(total([1]))\n\n\n", 'if __name__ == "__main__":\n    main()']
    code = body + "\n\n" + "".join(needed[:2] + usage[:1] + needed[2:] + usage[1:])
    answer = f"```python\n{HUMANEVAL_PROMPT}{code}\n```"
    expected = body + "\n\n" + "".join(needed).rstrip("\n") + "\n"
    assert middle_from_chat(answer, HUMANEVAL_PROMPT, "") == expected
    # With code after the gap, nothing after the function can stay.
    assert middle_from_chat(f"```python\n{code}\n```", "def f():\n", "    pass\n") == body


@pytest.mark.parametrize(
    "after",
    [
        '\n\nif __name__ == "__main__":\n    print(total([1, 2]))',
        "\n\n# Example usage:\n# total([1, 2]) gives 3\nprint(total([1, 2]))\n",
        "\n\nassert total([1, 2]) == 3\nassert total([]) == 0\n",
        "\n\nimport doctest\ndoctest.testmod()",
    ],
)
@pytest.mark.parametrize(
    "before",
    [
        "",  # the body alone
        "def total(xs: List[int]) -> int:\n",
        # the signature wrapped as a formatter wraps it, and a docstring of its own
        'def total(\n    xs: List[int],\n) -> int:\n    """Add them up."""\n',
        f"import math\n\n\n{HUMANEVAL_PROMPT}",
    ],
)
def test_humaneval_answer_with_code_after_the_function_gives_the_body(before, after):
    answer = f"Here you go:\n```python\n{before}{BODY}{after}```\nThis works."
    assert middle_from_chat(answer, HUMANEVAL_PROMPT, "") == BODY


# RandomSpanInfillingLight/HumanEval/28/1: the gap ends within the function's last line.
CONCATENATE = (
    "from typing import List\n\n\ndef concatenate(strings: List[str]) -> str:\n"
    '    """ Concatenate list of strings into a single string\n    """\n'
)


@pytest.mark.parametrize(
    "code",
    [
        "    return ''.join(strings)",  # the rest of the program, its line break the fence's
        "def concatenate(strings: List[str]) -> str:\n    return ''.join(strings)\n",
        f"{CONCATENATE}    return ''.join(strings)\n\n\nprint(concatenate(['a', 'b']))",
        "def concatenate(strings):\n    '''Join them.'''\n    return ''.join(strings)  ",
    ],
)
def test_answer_that_shows_the_rest_of_the_program_gives_the_gap(code):
    prefix, suffix = CONCATENATE + "    return ", "join(strings)\n"
    for answer in (f"```python\n{code}\n```", code.replace("\n", "\r\n")):
        assert middle_from_chat(answer, prefix, suffix) == "''."


def test_top_level_code_stays_when_the_gap_is_not_in_a_function():
    # A gap in module-level code, and a gap whose suffix goes on with top-level code.
    assert middle_from_chat("```python\nx = 1\nprint(x)\n```", "import os\n", "") == (
        "x = 1\nprint(x)\n"
    )
    prefix, suffix = "def f():\n    return 1\n", "\nprint(f())\n"
    middle = "\n\ndef g():\n    return 2\n\nx = g()"
    assert middle_from_chat(f"```python\n{middle}\n```", prefix, suffix) == middle


# HumanEval/115: the function's description is a string statement after an import, not its
# docstring; an answer may drop it or write its own there, as with a docstring.
MAX_FILL = 'def max_fill(grid, capacity):\n    import math\n    """\n    Fill the wells.\n    """\n'
MAX_FILL_BODY = "    return sum(math.ceil(sum(row) / capacity) for row in grid)\n"


@pytest.mark.parametrize("description", ["", '    """Count the buckets."""\n'])
@pytest.mark.parametrize("split", [0, 11, len(MAX_FILL_BODY) - 1])
def test_a_restated_function_may_drop_or_rewrite_a_description_after_an_import(description, split):
    prefix, middle = MAX_FILL + MAX_FILL_BODY[:split], MAX_FILL_BODY[split:]
    code = "def max_fill(grid, capacity):\n    import math\n" + description + MAX_FILL_BODY
    answer = f"```python\n{code}\n\nprint(max_fill([[1]], 1))\n```"
    assert middle_from_chat(answer, prefix, "") == middle
    # The same gap with the rest of the line after it as the suffix.
    if 0 < split < len(MAX_FILL_BODY) - 10:
        gap, rest = MAX_FILL_BODY[split:-10], MAX_FILL_BODY[-10:]
        assert middle_from_chat(answer, prefix, rest) == gap
