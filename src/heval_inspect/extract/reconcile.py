"""Steps 4 and 5: other code reconciled with the code around the gap (restated prefix, code after
the function, repeated suffix), and the readings an answer cannot show, decided by compiling.
"""

import re
import tokenize
from collections.abc import Iterator
from typing import Literal

from .code import (
    BLANK_LINES,
    CODE_AT_COLUMN_0,
    DEFINITION,
    FUNCTION_DEF,
    LINE_TOKENS,
    NOT_CODE,
    TRAILING_BLANK_OR_COMMENT_LINES,
    first_that_compiles,
    line_offsets,
    names_bound,
    open_at_end,
    tokens_of,
    top_level_statements,
    uses,
)


def reconciled(code: str, prefix: str, suffix: str) -> str:
    """The code as the gap's middle (steps 4 and 5)."""
    code, repeated_prefix = _without_repeated_prefix(code, prefix, suffix)
    code = _without_code_after_the_function(code, prefix, suffix)
    repeated_suffix = _before_repeated_suffix(code, suffix, repeated_prefix == "all")
    if repeated_suffix is not None and repeated_prefix == "all":
        return repeated_suffix[0]  # a whole program: the middle is what lies between
    readings = _readings(code, prefix, suffix)
    if repeated_suffix is not None:
        # The code without the repeat is read first when surely a repeat, else second (after
        # the likeliest reading of the code as shown).
        before_suffix, head = repeated_suffix
        surely = _surely_repeated(head, before_suffix, suffix, repeated_prefix)
        readings.insert(0 if surely else 1, before_suffix)
    return first_that_compiles(readings, prefix, suffix)


def _surely_repeated(head: str, before: str, suffix: str, repeated_prefix: str) -> bool:
    """Whether the code surely ends with a repeat of the suffix, not with code of its own that
    reads the same.

    Surely when the repeat starts a line of the answer, or when the answer repeats lines of the
    prefix and ends with all of the suffix (it restates the rest of the program), unless that
    is one line that starts within the indentation of the answer's last line (`        return
    False` ends with the suffix's `    return False`: more likely a line of the middle). Other
    matches start within a line (`...lower())` ends with the suffix's `)`): more likely the
    middle's own code.
    """
    if not before or before.endswith("\n") or head.startswith("\n"):
        return True
    rest = suffix.rstrip()
    in_indentation = before[before.rfind("\n") + 1 :].isspace() and head[:1].isspace()
    one_line_in_indentation = in_indentation and "\n" not in rest
    return repeated_prefix == "lines" and len(head) >= len(rest) and not one_line_in_indentation


def _end_of_repeat(code: str, text: str) -> int | None:
    """Where the repeat of `text` that opens the code ends, or None. Its lines may have lost
    their trailing whitespace (chat models strip it from the code they restate); its last line,
    which the code may go on, only if the code ends that line there."""
    if code.startswith(text):
        return len(text)
    *lines, last = text.split("\n")
    position = 0
    for line in lines:
        end = code.find("\n", position)
        if end == -1 or code[position:end].rstrip() != line.rstrip():
            return None
        position = end + 1
    if code.startswith(last, position):
        return position + len(last)
    line_end = code.find("\n", position)
    line = code[position:] if line_end == -1 else code[position:line_end]
    return position + len(line) if line == last.rstrip() else None


def _start_of_repeat(code: str, text: str) -> int | None:
    """Where the repeat of `text` that closes the code starts, or None. Its lines may have lost
    their trailing whitespace; its first line may end a line of the code."""
    if code.endswith(text):
        return len(code) - len(text)
    first, *lines = text.split("\n")
    end = len(code)
    for line in reversed(lines):
        start = code.rfind("\n", 0, end)
        if start == -1 or code[start + 1 : end].rstrip() != line.rstrip():
            return None
        end = start
    shown, first = code[:end].rstrip(" \t"), first.rstrip()
    return len(shown) - len(first) if shown.endswith(first) else None


def _without_repeated_prefix(
    code: str, prefix: str, suffix: str
) -> tuple[str, Literal["nothing", "lines", "all"]]:
    """The code after the code of the prefix it repeats, and what it repeats: lines of the
    prefix, or all of the prefix's part of the program (then it shows the rest of it, if any).

    That is the restated function that holds the gap, else the longest tail of the prefix that
    starts a line, holds code and opens the answer (all of it: a whole program). Pure
    indentation is left to _readings: a gap after indentation may begin with more of it. An
    answer that is only the tail but for its final line break (the fence's) leaves nothing.
    """
    after_function = _after_restated_function(code, prefix, suffix)
    if after_function is not None:
        return after_function, "all"
    for start in line_offsets(prefix):
        tail = prefix[start:]
        if tail.strip() and (end := _end_of_repeat(code + "\n", tail)) is not None:
            return code[end:], "all" if start == 0 else "lines"
    return code, "nothing"


def _after_restated_function(code: str, prefix: str, suffix: str) -> str | None:
    """The code after the prefix's part of the body, when the code restates the function that
    holds the gap (the prefix's last top-level `def`) from its `def` line, or None.

    What comes before the `def` line (imports, helpers) and the function's docstring (its own,
    or none) are the answer's to change: the body after the docstring is aligned with the
    prefix's, blank lines at its start aside. When no code follows the gap and the prefix ends a
    line, a body that does not repeat the prefix's part of it is the middle (the answer rewrote
    the code after the docstring: the prefix's stays before it).
    """
    functions = list(FUNCTION_DEF.finditer(prefix))
    if not functions:
        return None
    name = re.escape(functions[-1][1])
    restated = re.search(rf"^(?:async[ \t]+)?def[ \t]+{name}\b", code, re.MULTILINE)
    if restated is None:
        return None
    prefix_head_end = _head_end(prefix, functions[-1].start())
    code_head_end = _head_end(code, restated.start())
    if prefix_head_end is None or code_head_end is None:
        return None
    # From the line break after the head (or from where the prefix stops, if it stops there).
    prefix_body, code_body = prefix[prefix_head_end:], code[code_head_end:]
    for prefix_part, code_part in [
        (prefix_body, code_body),
        (_after_blank_lines(prefix_body), _after_blank_lines(code_body)),
    ]:
        if (end := _end_of_repeat(code_part, prefix_part)) is not None:
            return code_part[end:]
    # A string that stands as a statement further into the body (HumanEval/115's description
    # comes after an import) is the answer's to keep, change or drop, as a docstring is.
    prefix_kept, prefix_position = _without_string_statements(prefix_body)
    code_kept, position = _without_string_statements(code_body)
    if (end := _end_of_repeat(code_kept, prefix_kept)) is not None:
        # A string statement where the repeat ends restates the prefix's if the prefix ends
        # with one, else it is the middle's.
        last_kept = prefix_position[-1] if prefix_position else -1
        if prefix_body[last_kept + 1 :].strip():
            return code_body[position[end] if end < len(position) else len(code_body) :]
        return code_body[position[end - 1] + 1 if end else 0 :]
    if not suffix.strip() and prefix.endswith("\n"):
        return code_body[code_body.find("\n") + 1 :]
    return None


def _head_end(text: str, start: int) -> int | None:
    """Where the head of the function defined at `start` (its header, and its docstring if any)
    ends: at the line break after it, or where the text stops. None if it stops before."""
    tokens = tokens_of(text[start:])
    try:
        end = next(token for token in tokens if token.type == tokenize.NEWLINE)  # the header's
        first = next(token for token in tokens if token.type not in LINE_TOKENS)
        if first.type == tokenize.STRING and (after := next(tokens)).type == tokenize.NEWLINE:
            end = after  # a docstring's
    except (StopIteration, tokenize.TokenError, SyntaxError):
        return None
    row, column = end.start
    return start + line_offsets(text[start:])[row - 1] + column


def _without_string_statements(body: str) -> tuple[str, list[int]]:
    """The body without the lines of its statements that are only a string, and where each
    character left stands in the body. As far as the body tokenizes (a prefix stops anywhere)."""
    removed: list[tuple[int, int]] = []
    line_starts = line_offsets(body)
    tokens = tokens_of(body)
    statement_starts, string = True, None
    try:
        for token in tokens:
            if token.type in (tokenize.NL, tokenize.COMMENT, *NOT_CODE):
                continue
            if token.type == tokenize.NEWLINE:
                if string is not None:
                    row, column = token.end
                    end = line_starts[row] if row < len(line_starts) else len(body)
                    removed.append((line_starts[string.start[0] - 1], end))
                statement_starts, string = True, None
                continue
            string = token if statement_starts and token.type == tokenize.STRING else None
            statement_starts = False
    except (tokenize.TokenError, SyntaxError):
        pass
    position = [i for start, end in _gaps(removed, len(body)) for i in range(start, end)]
    return "".join(body[i] for i in position), position


def _gaps(removed: list[tuple[int, int]], length: int) -> Iterator[tuple[int, int]]:
    """The spans of 0..length between the removed ones (in order, not overlapping)."""
    start = 0
    for removed_start, removed_end in removed:
        yield start, removed_start
        start = removed_end
    yield start, length


def _after_blank_lines(text: str) -> str:
    # The pattern matches at the start of any text (the empty string at least).
    return BLANK_LINES.sub("", text, count=1)


def _without_code_after_the_function(code: str, prefix: str, suffix: str) -> str:
    """The code without the top-level code the answer adds after the function that holds the gap
    (an `if __name__` block, example calls), with the blank lines and comments that introduce it
    and the line break before them (as a closing fence would take it).

    Only when the gap is inside a top-level function or class and the suffix has no top-level
    code (else the middle may have some too). When no code follows the gap, the program can
    still hold what the code needs: definitions, imports and assignments of names that the
    function, or what else stays, uses.
    """
    if not CODE_AT_COLUMN_0.search(code) or CODE_AT_COLUMN_0.search(suffix):
        return code
    program = prefix + code
    gap_line = prefix.rfind("\n") + 1
    starts = list(top_level_statements(program))
    enclosing = [start for start in starts if start <= gap_line]  # the gap is in the last
    if not enclosing or enclosing[-1] == gap_line or not DEFINITION.match(program, enclosing[-1]):
        return code
    after = starts[len(enclosing) :]
    if not after:
        return code
    statements = [
        program[start:end] for start, end in zip(after, [*after[1:], len(program)], strict=True)
    ]
    bound = [names_bound(statement) if not suffix.strip() else set() for statement in statements]
    function = program[len(prefix) : after[0]]
    stays, kept = [False] * len(statements), function
    while used := [i for i, names in enumerate(bound) if not stays[i] and uses(kept, names)]:
        for index in used:
            stays[index] = True
        kept = function + "".join(s for s, stay in zip(statements, stays, strict=True) if stay)
    # The pattern matches at the end of any text (the empty string at least).
    return code if all(stays) else TRAILING_BLANK_OR_COMMENT_LINES.sub("", kept, count=1)


def _before_repeated_suffix(code: str, suffix: str, whole: bool) -> tuple[str, str] | None:
    """The code before the longest head of the suffix that ends at a line end and closes the
    answer, and that head; or None. The head must hold code, unless the answer is a whole program
    (then it ends with all of the suffix, whatever that is, its trailing whitespace maybe not as
    shown).
    """
    if not suffix:
        return None
    ends = {len(suffix), len(suffix.rstrip())} | {i for i, c in enumerate(suffix) if c == "\n"}
    heads = [
        suffix[:end]
        for end in sorted(ends, reverse=True)
        if suffix[:end].strip() or (whole and end >= len(suffix.rstrip()))
    ]
    # A head as shown before one without the whitespace at its line ends, which could take a
    # line of spaces for an empty line.
    for head in heads:
        if code.endswith(head):
            return code[: len(code) - len(head)], head
    for head in heads:
        if (start := _start_of_repeat(code, head)) is not None:
            return code[:start], head
    shown, rest = code.rstrip(), suffix.rstrip()
    if whole and (start := _start_of_repeat(shown, rest)) is not None:
        return shown[:start], rest
    return None


def _readings(code: str, prefix: str, suffix: str) -> list[str]:
    """The ways to read the code, most likely first (step 5)."""
    indentation = prefix[prefix.rfind("\n") + 1 :]
    bases = [code]
    if indentation and not indentation.strip() and code.startswith(indentation):
        bases.append(code[len(indentation) :])  # the answer restarted the gap's line
    readings = []
    for base in bases:
        if base.endswith("\n"):
            readings.append(base)
        elif _likely_ends_line(prefix + base, suffix):
            readings += [base + "\n", base]
        else:
            readings += [base, base + "\n"]
    return readings


def _likely_ends_line(code_before_suffix: str, suffix: str) -> bool:
    """Whether code that stops here most likely ends its line before the suffix.

    Likely when the suffix starts a line (it is empty, or its first line is indented code) after
    code; unlikely when the suffix continues the line (it starts with code, a line break or
    trailing spaces), when the code stops within indentation (the suffix's spaces add to it),
    or inside brackets or a string (where a line break means nothing, or changes the string).
    """
    last_line = code_before_suffix[code_before_suffix.rfind("\n") + 1 :]
    suffix_line = suffix.split("\n", 1)[0]
    starts_line = not suffix or (suffix[0] in " \t" and bool(suffix_line.strip()))
    return starts_line and bool(last_line.strip()) and not open_at_end(code_before_suffix)
