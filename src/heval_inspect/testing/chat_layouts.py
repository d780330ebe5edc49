"""Chat answers laid out as real chat models lay them out when they restate the function: their
own imports and helpers before it, other parameter names, another indentation unit, several
fenced blocks (recalled problems first, example usage after), and these combined.

Each layout is a row of `LAYOUTS`: `layout_answer(layout, record, right)` writes a task's answer
in it, right (the canonical solution's code) or wrong (the same layout around code that fails
its tests), or None where the layout does not apply to the task. The perfect model
(`perfect_model.PerfectModelServer`) answers in a layout when its model name is
`LAYOUT.right` or `LAYOUT.wrong`. Used by tests/test_chat_layouts.py.
"""

import ast
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from inspect_ai import Task as Task_
from inspect_ai.dataset import Sample

DEF_LINE = re.compile(r"^def[ \t]+(?P<name>\w+)", re.MULTILINE)
# A helper the function's code calls, and the import the helper needs.
HELPER = (
    "import math\n\n\n"
    "def _checked(value):\n"
    '    """The value, after a check that math is there."""\n'
    "    assert math.isfinite(1.0)\n"
    "    return value\n"
)
WRONG_HELPER = HELPER.replace("    return value\n", "    raise ValueError('not this')\n")
# A statement of the answer's own that calls the helper: the first line of its code.
CALL = "_checked(None)\n"
# What a wrong answer puts where the canonical code of a gap within a line was.
UNDEFINED = "_no_such_name"
# Two problems an analogical answer recalls and solves first, each in its own block.
RECALLED = (
    "## Relevant problems\n\n1. Return the sum of a list of numbers.\n\n"
    "```python\ndef sum_list(numbers):\n    total = 0\n    for n in numbers:\n"
    "        total += n\n    return total\n```\n\n"
    "2. Reverse a string.\n\n"
    "```python\ndef reverse(text: str) -> str:\n    return text[::-1]\n```\n\n"
    "## Solving the original problem\n\n"
)


@dataclass(frozen=True)
class Task:
    """A task as the layouts see it: the program's parts around the gap."""

    prefix: str
    middle: str
    suffix: str

    @property
    def start(self) -> int:
        """Where the function that holds the gap starts in the prefix."""
        return [match.start() for match in DEF_LINE.finditer(self.prefix)][-1]

    @property
    def function(self) -> str:
        """The function that holds the gap, whole, as the prompt and the canonical code have it."""
        return self.prefix[self.start :] + self.middle + self.suffix

    @property
    def name(self) -> str:
        return [match["name"] for match in DEF_LINE.finditer(self.prefix)][-1]

    @property
    def line_gap(self) -> bool:
        """The gap is whole lines at the body's first level, which a statement may start."""
        first = self.middle[: len(self.middle) - len(self.middle.lstrip(" "))]
        return self.prefix.endswith("\n") and self.middle.endswith("\n") and first == "    "


def _wrong(task: Task) -> Task | None:
    """The task with code in its gap that fails: a statement that raises where the gap starts a
    line, else a name nothing defines in place of the gap's code; None for an empty gap."""
    if not task.middle.strip():
        return None
    if task.line_gap or not task.suffix.strip():
        indentation = "    " if task.line_gap or task.prefix.endswith("\n") else ""
        raises = f"{indentation}raise ValueError('a wrong answer')\n"
        if not task.prefix.endswith("\n") and not indentation:
            return None
        return Task(task.prefix, raises + task.middle, task.suffix)
    return Task(task.prefix, UNDEFINED, task.suffix)


def _renamed(function: str) -> str | None:
    """The function with each parameter renamed (`x` to `x_value`), in its header and body, as a
    model that prefers other names writes it; None where a simple renaming could miss a use (an
    f-string, a keyword argument of the same name) or clash."""
    if re.search(r"\b[fF][rR]?['\"]", function):
        return None
    try:
        parsed = ast.parse(function).body[0]
        tokens = list(tokenize.generate_tokens(io.StringIO(function).readline))
    except (SyntaxError, tokenize.TokenError, IndexError):
        return None
    assert isinstance(parsed, ast.FunctionDef)
    names = {a.arg: f"{a.arg}_value" for a in [*parsed.args.args, *parsed.args.kwonlyargs]}
    if not names or any(re.search(rf"\b{new}\b", function) for new in names.values()):
        return None
    lines = function.split("\n")
    edits = []
    for index, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string not in names:
            continue
        before = tokens[index - 1].string if index else ""
        after = tokens[index + 1].string if index + 1 < len(tokens) else ""
        if before == ".":
            continue
        if after == "=" and before in ("(", ",") and token.start[0] > parsed.lineno:
            return None  # maybe a keyword argument of a call: left alone by a careful model
        edits.append(token)
    for token in reversed(edits):
        row, column = token.start
        line = lines[row - 1]
        lines[row - 1] = line[:column] + names[token.string] + line[column + len(token.string) :]
    return "\n".join(lines)


def _indented_by(function: str, unit: str) -> str | None:
    """The function with each level of four spaces made `unit` (lines in strings as they
    are); None where its indentation is not whole levels of four."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(function).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    in_strings = {
        row for t in tokens if t.type == tokenize.STRING for row in range(t.start[0], t.end[0])
    }
    lines = function.split("\n")
    for row, line in enumerate(lines):
        if row in in_strings or not line.strip():
            continue
        spaces = len(line) - len(line.lstrip(" "))
        if spaces % 4 or line[spaces] == "\t":
            return None
        lines[row] = unit * (spaces // 4) + line[spaces:]
    text = "\n".join(lines)
    return text if _same_code(text, function) else None


def _same_code(a: str, b: str) -> bool:
    """Whether two functions are the same code, docstrings aside."""
    try:
        trees = [ast.parse(text) for text in (a, b)]
    except SyntaxError:
        return False
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and ast.get_docstring(node) is not None:
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(trees[0]) == ast.dump(trees[1])


def _fenced(code: str) -> str:
    return f"```python\n{code.rstrip(chr(10))}\n```"


# Each layout: the restated function (from its `def` line, gap filled, right or wrong) to the
# answer's text, given the task, whether it is right, and the canonical function; or None where
# it does not apply.
Layout = Callable[[str, Task, bool, str], str | None]


def imports_and_helper_first(function: str, task: Task, right: bool, canonical: str) -> str | None:
    helper = HELPER if right else WRONG_HELPER
    return f"Here is my solution:\n\n{_fenced(helper + chr(10) + chr(10) + function)}"


def renamed_parameters(function: str, task: Task, right: bool, canonical: str) -> str | None:
    renamed = _renamed(function)
    if renamed is not None and not right and not task.suffix.strip() and task.prefix.endswith("\n"):
        # Wrong: the new names in the header only; the body reads the old ones, unbound.
        renamed = renamed.split("\n", 1)[0] + "\n" + function.split("\n", 1)[1]
    return None if renamed is None else _fenced(renamed)


def two_space_indentation(function: str, task: Task, right: bool, canonical: str) -> str | None:
    indented = _indented_by(function, "  ")
    return None if indented is None else _fenced(indented)


def tab_indentation(function: str, task: Task, right: bool, canonical: str) -> str | None:
    indented = _indented_by(function, "\t")
    return None if indented is None else _fenced(indented)


def recalled_problems_first(function: str, task: Task, right: bool, canonical: str) -> str | None:
    # Wrong: a right first try, then the wrong function as the final answer.
    first = "" if right else f"A first try:\n\n{_fenced(canonical)}\n\nBetter:\n\n"
    return f"{RECALLED}{first}{_fenced(function)}\n\nThis passes the examples."


def example_usage_after(function: str, task: Task, right: bool, canonical: str) -> str | None:
    usage = f"print({task.name}.__name__)\n"
    return f"{_fenced(function)}\n\nYou can call it like this:\n\n{_fenced(usage)}"


def all_at_once(function: str, task: Task, right: bool, canonical: str) -> str | None:
    renamed = _renamed(function)
    indented = _indented_by(renamed, "  ") if renamed else None
    if indented is None:
        return None
    helper = _indented_by(HELPER if right else WRONG_HELPER, "  ")
    assert helper is not None
    usage = _fenced(f"print({task.name}.__name__)")
    return f"{RECALLED}{_fenced(helper + chr(10) + chr(10) + indented)}\n\n{usage}"


@dataclass(frozen=True)
class LayoutRow:
    write: Layout
    # The issue-47 classes it belongs to: 1 imports and helpers, 2 parameter names,
    # 3 indentation, 4 several blocks.
    classes: tuple[int, ...]
    # Its code calls a helper of the answer's own (whose wrong version raises).
    calls_helper: bool = False
    # With no code after the gap, and the gap at a line's start, its wrong answers are wrong by
    # the layout itself. (Elsewhere extraction cannot run a restated function as written.)
    wrong_by_layout: bool = False


LAYOUTS: dict[str, LayoutRow] = {
    "imports_and_helper_first": LayoutRow(imports_and_helper_first, (1,), calls_helper=True),
    "renamed_parameters": LayoutRow(renamed_parameters, (2,), wrong_by_layout=True),
    "two_space_indentation": LayoutRow(two_space_indentation, (3,)),
    "tab_indentation": LayoutRow(tab_indentation, (3,)),
    "recalled_problems_first": LayoutRow(recalled_problems_first, (4,)),
    "example_usage_after": LayoutRow(example_usage_after, (4,)),
    "all_at_once": LayoutRow(all_at_once, (1, 2, 3, 4), calls_helper=True),
}


def layout_answer(layout: str, prefix: str, middle: str, suffix: str, right: bool) -> str | None:
    """The answer to the task in the layout, right or wrong; None where it does not apply."""
    row = LAYOUTS[layout]
    if not DEF_LINE.search(prefix):
        return None
    task: Task | None = Task(prefix, middle, suffix)
    assert task is not None
    if row.calls_helper:
        # The first line of the gap's code calls the helper: a gap that starts a statement (any
        # gap of HumanEval, whose gap is the whole body).
        if not (task.line_gap or (not suffix.strip() and prefix.endswith("\n"))):
            return None
        task = Task(prefix, "    " + CALL + middle, suffix)
    elif not right and not (row.wrong_by_layout and not suffix.strip() and prefix.endswith("\n")):
        task = _wrong(task)
    if task is None or not _parses(task.function):
        return None
    return row.write(task.function, task, right, Task(prefix, middle, suffix).function)


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def model_layout(model: str) -> tuple[str, bool] | None:
    """The layout and rightness a model name asks for (`renamed_parameters.wrong`), or None."""
    layout, _, kind = model.rpartition(".")
    if layout in LAYOUTS and kind in ("right", "wrong"):
        return layout, kind == "right"
    return None


def spread(records: list[dict], count: int, applies: Callable[[dict], bool]) -> list[dict]:
    """Up to `count` of the records that `applies` takes, spread over the list (over its
    problems: the files are ordered by problem): every n-th record first, then the ones after
    each of those, and so on, asking `applies` of as few as it can."""
    stride = max(1, len(records) // count)
    chosen: list[dict] = []
    for offset in range(stride):
        for record in records[offset::stride]:
            if len(chosen) == count:
                return sorted(chosen, key=records.index)
            if applies(record):
                chosen.append(record)
    return sorted(chosen, key=records.index)


def corpus(
    files: dict[str, list[dict]], per_file: dict[str, int]
) -> dict[tuple[str, bool], list[dict]]:
    """The records each layout answers, right (True) and wrong: of each file, `per_file[name]`
    of the records the layout applies to, spread over its problems."""
    chosen = {}
    for layout in LAYOUTS:
        for right in (True, False):

            def applies(record: dict, layout: str = layout, right: bool = right) -> bool:
                answer = layout_answer(
                    layout,
                    record["prompt"],
                    record["canonical_solution"],
                    record.get("suffix", ""),
                    right,
                )
                return answer is not None

            chosen[layout, right] = [
                record
                for name, file_records in files.items()
                for record in spread(file_records, per_file[name], applies)
            ]
    return chosen


def layout_tasks(chosen: dict[tuple[str, bool], list[dict]]) -> list[Task_]:
    """The Inspect tasks that ask the perfect model for the chosen records in each layout: a
    HumanEval task and an infilling task per layout and kind, cut down to its records, each with
    its model (`openai/LAYOUT.right`; OPENAI_BASE_URL must name the perfect-model server)."""
    from inspect_ai import task_with
    from inspect_ai.model import get_model

    from ..tasks import humaneval, humaneval_infilling

    tasks = []
    for (layout, right), records in chosen.items():
        ids = {record["task_id"] for record in records}
        kind = "right" if right else "wrong"
        model = get_model(f"openai/{layout}.{kind}", responses_api=False, memoize=False)
        for task in (humaneval_infilling(), humaneval()):
            task.dataset = task.dataset.filter(partial(_among, ids))
            if len(task.dataset):
                tasks.append(task_with(task, model=model))
    return tasks


def _among(ids: set[str], sample: Sample) -> bool:
    return sample.id in ids
