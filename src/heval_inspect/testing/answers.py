"""How a perfect model writes a task's answer: the canonical span in each chat style of
`CHAT_STYLES` (rendered by one function, `chat_answer`), or as a FIM completion (the span, the
family's first stop token and some garbage after it). Used by the perfect model's server, the
extraction tests and the benchmarks.
"""

import re
from dataclasses import dataclass
from typing import Literal

from ..prompts import FimFormat

# What a model may write after its stop token: never part of the middle.
GARBAGE = "\ndef unrelated():\n    return 'after the stop token'\n"
THOUGHT = "<think>\nThe gap needs the missing code; a ```python block\nholds it.\n</think>\n\n"
PROSE_BEFORE = "Here is the missing code:\n\n"
PROSE_AFTER = "\n\nIt fills the gap so that the tests pass."
# Code a model adds after the function it restates, to show it in use.
MAIN_BLOCK = '\n\nif __name__ == "__main__":\n    import doctest\n\n    doctest.testmod()\n'
EXAMPLE_USAGE = "\n\n# Example usage:\nprint({call})\n"
DEF_LINE = re.compile(r"^(?:async[ \t]+)?def[ \t]+(?P<name>\w+)", re.MULTILINE)
DOCSTRING = re.compile(r"""(?P<indentation>[ \t]*)("{3}|'{3}).*?\2[^\n]*\n""", re.DOTALL)


@dataclass(frozen=True)
class ChatStyle:
    name: str
    before: str = ""  # text before the code (prose, a think block)
    after: str = ""
    fence: str | None = "python"  # the fence's language tag; None: no fence
    closed: bool = True  # False: the fence is never closed
    # The code around the gap the answer restates: before the middle, the prefix's last line with
    # code, the function from its `def` line (after the imports, or alone), or the whole prefix;
    # after it, the suffix's first line with code, or the whole suffix (the rest of the program).
    repeats_prefix: Literal["nothing", "line", "function", "imports_and_function", "all"] = (
        "nothing"
    )
    repeats_suffix: Literal["nothing", "line", "all"] = "nothing"
    docstring: Literal["kept", "dropped", "own"] = "kept"  # in a restated function
    trailing: str = ""  # top-level code after the program, e.g. an `if __name__` block
    strips_line_ends: bool = False  # True: no whitespace at the ends of lines, as editors save
    line_break: str = "\n"
    # False: the code's own final line break is not shown (the fence's line break stands for it,
    # or the API dropped it), as most real answers go. Then the answer cannot tell whether the
    # middle ends its line, and only the program, not the span, can be recovered exactly.
    exact: bool = True


CHAT_STYLES: dict[str, ChatStyle] = {
    style.name: style
    for style in [
        ChatStyle("bare_fence"),
        ChatStyle("prose_fence", before=PROSE_BEFORE, after=PROSE_AFTER),
        ChatStyle("think_fence", before=THOUGHT),
        ChatStyle("repeated_prefix_line", repeats_prefix="line"),
        # The whole program, from its first line.
        ChatStyle(
            "whole_function", before=PROSE_BEFORE, repeats_prefix="all", repeats_suffix="all"
        ),
        ChatStyle("no_fence", fence=None),
        ChatStyle("py_tag", fence="py"),
        ChatStyle("python3_tag", fence="python3"),
        ChatStyle("untagged_fence", fence=""),
        ChatStyle("unclosed_fence", before=PROSE_BEFORE, closed=False),
        ChatStyle("repeated_suffix_line", repeats_suffix="line"),
        ChatStyle("crlf", before=PROSE_BEFORE, after=PROSE_AFTER, line_break="\r\n"),
        ChatStyle("natural_fence", exact=False),
        ChatStyle("natural_no_fence", fence=None, exact=False),
        ChatStyle("natural_repeated_prefix_line", repeats_prefix="line", exact=False),
        ChatStyle(
            "natural_whole_function", repeats_prefix="all", repeats_suffix="all", exact=False
        ),
        # Answers that restate the function, or the rest of the program, around the middle.
        ChatStyle("def_to_end", repeats_prefix="function", repeats_suffix="all"),
        ChatStyle(
            "natural_def_to_end", repeats_prefix="function", repeats_suffix="all", exact=False
        ),
        ChatStyle(
            "natural_def_to_end_with_imports",
            before=PROSE_BEFORE,
            after=PROSE_AFTER,
            repeats_prefix="imports_and_function",
            repeats_suffix="all",
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_stripped_line_ends",
            repeats_prefix="function",
            repeats_suffix="all",
            strips_line_ends=True,
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_without_docstring",
            repeats_prefix="function",
            repeats_suffix="all",
            docstring="dropped",
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_own_docstring_crlf",
            before=PROSE_BEFORE,
            repeats_prefix="function",
            repeats_suffix="all",
            docstring="own",
            line_break="\r\n",
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_example_usage",
            repeats_prefix="function",
            repeats_suffix="all",
            trailing=EXAMPLE_USAGE,
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_main_block",
            repeats_prefix="function",
            repeats_suffix="all",
            trailing=MAIN_BLOCK,
            exact=False,
        ),
        ChatStyle(
            "natural_whole_program_example_usage_no_fence",
            fence=None,
            repeats_prefix="all",
            repeats_suffix="all",
            trailing=EXAMPLE_USAGE,
            exact=False,
        ),
        ChatStyle(
            "natural_rest_of_program", repeats_prefix="line", repeats_suffix="all", exact=False
        ),
        ChatStyle(
            "natural_rest_of_program_main_block",
            repeats_prefix="line",
            repeats_suffix="all",
            trailing=MAIN_BLOCK,
            exact=False,
        ),
    ]
}


def chat_answer(style: ChatStyle, prefix: str, middle: str, suffix: str) -> str:
    """What a perfect chat model answers in this style."""
    repeated_suffix = _repeated_suffix(style, middle, suffix)
    code = _repeated_prefix(style, prefix) + middle + repeated_suffix
    if repeated_suffix == suffix:  # code after the program follows all of it
        code += _trailing(style, prefix)
    if style.strips_line_ends:
        code = "\n".join(line.rstrip() for line in code.split("\n"))
    if not style.exact and code.endswith("\n"):
        code = code[:-1]
    if style.fence is None:
        text = code
    else:
        # The fence lines enclose the code: its own final line break, if shown, makes an empty
        # last line.
        text = f"```{style.fence}\n{code}" + ("\n```" if style.closed else "")
    return (style.before + text + style.after).replace("\n", style.line_break)


def _repeated_prefix(style: ChatStyle, prefix: str) -> str:
    if style.repeats_prefix == "all":
        return prefix
    if style.repeats_prefix in ("function", "imports_and_function"):
        function = _restated_function(prefix, style.docstring)
        imports = "".join(
            line
            for line in prefix.splitlines(keepends=True)
            if line.startswith(("import ", "from "))
        )
        if style.repeats_prefix == "function" or not imports:
            return function
        return f"{imports}\n\n{function}"  # two blank lines, whatever the prompt had
    if style.repeats_prefix != "line":
        return ""
    # Restart at the beginning of the last line with code: the gap's own line, or the lines
    # before it when the gap's line has no code before the gap.
    start = len(prefix)
    while start > 0 and not prefix[start:].strip():
        start = prefix.rfind("\n", 0, start - 1) + 1
    return prefix[start:]


def _restated_function(prefix: str, docstring: str) -> str:
    """The prefix from the `def` line of the function that holds the gap, its docstring as the
    style has it."""
    start = [match.start() for match in DEF_LINE.finditer(prefix)][-1]
    body = prefix.index("\n", start) + 1
    found = DOCSTRING.match(prefix, body)
    if docstring == "kept" or not found:
        return prefix[start:]
    own = f'{found["indentation"]}"""Solve the task."""\n' if docstring == "own" else ""
    return prefix[start:body] + own + prefix[found.end() :]


def _repeated_suffix(style: ChatStyle, middle: str, suffix: str) -> str:
    if style.repeats_suffix == "all" and style.repeats_prefix == "line":
        ends_in_indentation = middle[middle.rfind("\n") + 1 :].isspace()
        if ends_in_indentation and suffix[:1].isspace() and "\n" not in suffix.rstrip():
            # The middle ends with indentation that the suffix's one line continues: after a
            # repeated prefix line, repeating that line reads the same as a middle that ends
            # with it, which extract.py resolves as the middle's own line.
            return ""
    if style.repeats_suffix == "all":
        return suffix
    if style.repeats_suffix != "line" or not suffix.strip():
        return ""
    if not (middle.endswith("\n") or suffix.startswith("\n")):
        # A gap that ends within a line: repeating the rest of that line reads the same as a
        # middle that ends with that text, which extract.py resolves by the middle's own reading.
        return ""
    # Up to the end of the first line that holds code.
    code_at = len(suffix) - len(suffix.lstrip())
    end = suffix.find("\n", code_at)
    return suffix if end == -1 else suffix[:end]


def _trailing(style: ChatStyle, prefix: str) -> str:
    """The style's trailing code, calling the function as its first doctest example does."""
    if not style.trailing:
        return ""
    name = [match["name"] for match in DEF_LINE.finditer(prefix)][-1]
    example = re.search(rf"^\s*>>> ({name}\(.*\))\s*$", prefix, re.MULTILINE)
    return style.trailing.format(call=example[1] if example else f"{name}()")


def fim_answer(family: FimFormat, middle: str) -> str:
    """What a FIM model generates when the server does not cut at the stop sequences."""
    return middle + family.stop[0] + GARBAGE
