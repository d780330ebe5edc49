"""Answer extraction and FIM prompts, on every task of the real data files. No sandbox needed."""

import ast
from collections import Counter

import pytest

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.extract import middle_from_chat, middle_from_fim
from heval_inspect.prompts import FIM_FORMATS, fim_format, fim_prompt
from heval_inspect.testing.answers import CHAT_STYLES, chat_answer, fim_answer

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


# Real chat answers that restate the function under test in their own way (issue 47). The
# program that runs must mean what the answer means. HumanEval/140's layout: the answer's own
# import, then the function.
FIX_SPACES = (
    "\ndef fix_spaces(text):\n"
    '    """Replace spaces with underscores, and runs of more than 2 with -."""\n'
)
FIX_SPACES_BODY = '    text = re.sub(" {3,}", "-", text)\n    return text.replace(" ", "_")\n'


def program_of(answer: str, prefix: str, suffix: str = "") -> str:
    return prefix + middle_from_chat(answer, prefix, suffix) + suffix


def top_level_names(program: str) -> list[str]:
    """The names the program's top-level statements bind, in order (what the tests will see)."""
    names = []
    for node in ast.parse(program).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [alias.asname or alias.name for alias in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
    return names


@pytest.mark.parametrize(
    "before",
    [
        "import re\n\n",
        "import re\nfrom typing import List\n\n\n",
        "from re import sub\nimport re\n\n",
        # a helper that the function calls, before it
        'import re\n\ndef _dashes(text):\n    return re.sub(" {3,}", "-", text)\n\n',
    ],
)
def test_an_import_or_a_helper_before_a_restated_function_stays(before):
    body = FIX_SPACES_BODY
    if "_dashes" in before:
        body = '    text = _dashes(text)\n    return text.replace(" ", "_")\n'
    answer = f"Here it is:\n```python\n{before}def fix_spaces(text):\n{body}```"
    program = program_of(answer, FIX_SPACES)
    names = top_level_names(program)
    assert names[0] == "fix_spaces" and "re" in names, program
    assert ("_dashes" in names) == ("_dashes" in before)
    # An import the prompt already has is not added again, nor one the code does not use.
    assert "List" not in names and "sub" not in names
    assert program.startswith(FIX_SPACES + body)


def test_what_a_restated_function_needs_is_kept_in_an_infilling_gap_too():
    # The gap is the body's first line; the answer restates the function around it, after an
    # import and a helper of its own that its gap code uses.
    prefix, suffix = FIX_SPACES, '    return text.replace(" ", "_")\n'
    answer = (
        "```python\nimport re\n\n\ndef _dashes(text):\n    return re.sub(' {3,}', '-', text)\n\n\n"
        f"def fix_spaces(text):\n    text = _dashes(text)\n{suffix}```"
    )
    middle = middle_from_chat(answer, prefix, suffix)
    assert middle.endswith("    text = _dashes(text)\n")
    function = ast.parse(prefix + middle + suffix).body[0]
    assert [type(node).__name__ for node in function.body][1:] == [
        "Import",
        "FunctionDef",
        "Assign",
        "Return",
    ]


# HumanEval/160's layout: the restated function names its parameters otherwise.
DO_ALGEBRA = (
    "\ndef do_algebra(operator, operand):\n"
    '    """Evaluate operand[0] operator[0] operand[1] ...\n    """\n'
)
DO_ALGEBRA_CODE = (
    "def do_algebra(operators, operands):\n"
    "    expression = str(operands[0])\n"
    "    for op, number in zip(operators, operands[1:]):\n"
    "        expression += op + str(number)\n"
    "    return eval(expression)\n"
)


def test_a_restated_function_with_other_parameter_names_is_the_one_that_runs():
    program = program_of(f"```python\n{DO_ALGEBRA_CODE}```", DO_ALGEBRA)
    # The answer's function, as written, follows the prompt's and replaces it.
    functions = [node for node in ast.parse(program).body if isinstance(node, ast.FunctionDef)]
    assert [f.name for f in functions] == ["do_algebra", "do_algebra"]
    assert [a.arg for a in functions[-1].args.args] == ["operators", "operands"]
    assert program.endswith(DO_ALGEBRA_CODE)


def test_a_restated_function_with_other_parameter_names_fills_an_infilling_gap_in_the_prompts():
    # The gap is the loop's line; with code after it, the answer's names become the prompt's.
    prefix = DO_ALGEBRA + "    expression = str(operand[0])\n"
    suffix = "        expression += op + str(number)\n    return eval(expression)\n"
    for code in (DO_ALGEBRA_CODE, DO_ALGEBRA_CODE.replace("    ", "  ")):
        middle = middle_from_chat(f"```python\n{code}```", prefix, suffix)
        assert middle == "    for op, number in zip(operator, operand[1:]):\n", code


def test_a_renaming_that_would_change_the_function_is_not_made():
    # The answer's body reads `operand`, a global it would capture: no renaming; its code is
    # not read as if it had the prompt's parameters (it fails, as written, with a NameError).
    code = DO_ALGEBRA_CODE.replace("str(operands[0])", "str(operand[0])")
    program = program_of(f"```python\n{code}```", DO_ALGEBRA)
    assert program.endswith(code)


# HumanEval/97's layout: the restated function is indented by two spaces, or by tabs.
MULTIPLY = '\ndef multiply(a, b):\n    """The product of the unit digits of a and b."""\n'


@pytest.mark.parametrize("unit", ["  ", "\t", "   "])
def test_a_restated_function_indented_otherwise_is_the_one_that_runs(unit):
    code = f"def multiply(a, b):\n{unit}if a < 0 or b < 0:\n{unit * 2}a, b = abs(a), abs(b)\n"
    code += f"{unit}return (a % 10) * (b % 10)\n"
    program = program_of(f"```python\n{code}```", MULTIPLY)
    assert compile(program, "<program>", "exec") and program.endswith(code)
    # In an infilling gap, the answer's lines take the prompt's indentation.
    prefix = MULTIPLY + "    if a < 0 or b < 0:\n"
    suffix = "    return (a % 10) * (b % 10)\n"
    assert (
        middle_from_chat(f"```python\n{code}```", prefix, suffix)
        == "        a, b = abs(a), abs(b)\n"
    )


RECALLED = "```python\ndef add(a, b):\n    return a + b\n```\n"


@pytest.mark.parametrize(
    "answer",
    [
        # analogical prompting: recalled problems first, each solved in its own block
        f"# Relevant problems\n1. Add two numbers.\n{RECALLED}2. Reverse.\n"
        "```python\ndef reverse(s):\n    return s[::-1]\n```\n# Solution\n"
        "```python\ndef multiply(a, b):\n    return (abs(a) % 10) * (abs(b) % 10)\n```",
        # the solution, then a block of example usage
        "```python\ndef multiply(a, b):\n    return (abs(a) % 10) * (abs(b) % 10)\n```\n"
        "Example:\n```python\nprint(multiply(148, 412))  # 16\n```",
        # a recalled problem, then the body alone
        f"{RECALLED}So:\n```python\n    return (abs(a) % 10) * (abs(b) % 10)\n```",
        # a first try, then the final function
        "```python\ndef multiply(a, b):\n    return a * b\n```\nFixed:\n"
        "```python\ndef multiply(a, b):\n    return (abs(a) % 10) * (abs(b) % 10)\n```",
    ],
)
def test_the_block_that_holds_the_answer_is_the_one_that_defines_the_function(answer):
    assert middle_from_chat(answer, MULTIPLY, "") == "    return (abs(a) % 10) * (abs(b) % 10)\n"


def test_a_changed_helper_of_the_prompt_is_the_one_that_runs():
    # HumanEval/38's layout: the tests call the prompt's encode_cyclic too; an answer that
    # restates it otherwise is judged with its own.
    prompt = (
        'def encode(s: str):\n    """Shift."""\n    return s[1:] + s[:1]\n\n\n'
        'def decode(s: str):\n    """Undo encode."""\n'
    )
    answer = (
        "```python\ndef encode(s: str):\n    return s\n\n\n"
        "def decode(s: str):\n    return s[-1:] + s[:-1]\n```"
    )
    program = program_of(answer, prompt)
    functions = [node.name for node in ast.parse(program).body if isinstance(node, ast.FunctionDef)]
    assert functions[-1] == "encode" and "    return s\n" in program[len(prompt) :]
    # Restated as the prompt has it (another docstring aside): nothing is added.
    same = answer.replace("    return s\n", '    """Rotate."""\n    return s[1:] + s[:1]\n')
    assert middle_from_chat(same, prompt, "") == "    return s[-1:] + s[:-1]\n"


@pytest.mark.parametrize(
    "answer",
    [
        # a helper in a block of its own, then the function that calls it
        "First a helper:\n```python\nimport math\n\ndef last_digit(n):\n"
        "    return int(math.fabs(n)) % 10\n```\nThen:\n```python\ndef multiply(a, b):\n"
        "    return last_digit(a) * last_digit(b)\n```",
        # the same, the body alone in the second block
        "```python\nimport math\n\ndef last_digit(n):\n    return int(math.fabs(n)) % 10\n```\n"
        "```python\n    return last_digit(a) * last_digit(b)\n```",
    ],
)
def test_a_helper_the_answer_wrote_in_a_block_of_its_own_is_there_for_its_code(answer):
    program = program_of(answer, MULTIPLY)
    assert top_level_names(program)[:1] == ["multiply"]
    assert {"math", "last_digit"} <= set(top_level_names(program))
    assert "    return last_digit(a) * last_digit(b)\n" in program
    # What the code does not read stays out: a recalled problem's function.
    assert "def add" not in program_of(RECALLED + answer, MULTIPLY)


def test_what_a_restated_function_needs_stays_when_text_that_is_not_python_follows_it():
    answer = (
        f"```python\nimport re\n\ndef fix_spaces(text):\n{FIX_SPACES_BODY}\n"
        ">>> fix_spaces(\"a   b\")\n'a-b'\n```"
    )
    program = program_of(answer, FIX_SPACES)
    assert top_level_names(program) == ["fix_spaces", "re"]


def test_a_restated_function_in_a_block_indented_under_a_list_item_is_read_as_its_code():
    answer = (
        "1. Import what it needs:\n2. Write it:\n\n   ```python\n   import re\n\n"
        "   def fix_spaces(text):\n"
        + "".join(f"   {line}\n" for line in FIX_SPACES_BODY.splitlines())
        + "   ```\n"
    )
    program = program_of(answer, FIX_SPACES)
    assert top_level_names(program) == ["fix_spaces", "re"]
    assert program.startswith(FIX_SPACES + FIX_SPACES_BODY)


def test_an_f_string_across_lines_keeps_its_text_when_its_function_is_reindented():
    # Under every Python: 3.12 and later tokenize an f-string's parts apart.
    prefix = '\ndef greet(name):\n    """Greet."""\n    text = f"""Hello\n  {name},\n'
    suffix = '  welcome"""\n    return text\n'
    code = 'def greet(name):\n  text = f"""Hello\n  {name},\n  welcome"""\n  return text\n'
    assert middle_from_chat(f"```python\n{code}```", prefix, suffix) == ""
