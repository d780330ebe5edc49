"""`reformatted`: the same tokens laid out differently (quotes, spaces inside brackets,
a bracket of three or more items one a line, a blank line after each docstring).
"""

import ast
import itertools
import tokenize

from .text import CLOSING, LAYOUT, OPENING, Edit, Source, docstring_statements, tokens_of


def layout_edits(text: str) -> list[Edit]:
    """The layout edits of a problem's text: quotes, spaces inside brackets, a bracket of three
    or more items one a line, a blank line after each docstring. Nothing inside an f-string
    changes (its format specs and `=` keep their spaces)."""
    source = Source(text)
    tokens = tokens_of(text)
    edits = []
    significant = [token for token in tokens if token.type not in LAYOUT]
    in_fstring = _in_fstring(significant)
    for token, inside in zip(significant, in_fstring, strict=True):
        # (Python 3.12 tokenizes a string inside an f-string's braces as a string of its own.)
        if token.type == tokenize.STRING and not inside:
            flipped = _flipped_quotes(token.string)
            if flipped != token.string:
                start = source.of_token(token.start)
                edits.append(Edit(start, start + len(token.string), flipped))
    for index, (before, after) in enumerate(itertools.pairwise(significant)):
        if in_fstring[index] or in_fstring[index + 1] or before.end != after.start:
            continue  # (tokens apart already, or on different lines)
        opens = before.type == tokenize.OP and before.string in OPENING
        closes = after.type == tokenize.OP and after.string in CLOSING
        if opens != closes:  # a space after "(" or before ")", not in "()"
            offset = source.of_token(before.end)
            edits.append(Edit(offset, offset, " "))
    edits += _line_breaks(source, significant, in_fstring, edits)
    edits += _blank_lines(source, tokens)
    return edits


def _in_fstring(tokens: list[tokenize.TokenInfo]) -> list[bool]:
    """Whether each token is part of an f-string (Python 3.12 tokenizes f-strings' parts)."""
    depth, inside = 0, []
    for token in tokens:
        name = tokenize.tok_name.get(token.type, "")
        if name == "FSTRING_START":
            depth += 1
        inside.append(depth > 0)
        if name == "FSTRING_END":
            depth -= 1
    return inside


def _flipped_quotes(string: str) -> str:
    """A string literal in the other quote style, if its text holds no quote of that style
    (else as it is); f-strings as they are."""
    prefix = ""
    while len(prefix) < len(string) and string[len(prefix)] not in "'\"":
        prefix += string[len(prefix)]
    if "f" in prefix.lower():
        return string
    rest = string[len(prefix) :]
    for quote, other in (('"""', "'''"), ("'''", '"""'), ('"', "'"), ("'", '"')):
        if rest.startswith(quote):
            body = rest[len(quote) : len(rest) - len(quote)]
            if other[0] in body or body.endswith("\\"):
                return string
            return prefix + other + body + other
    return string


def _line_breaks(
    source: Source,
    tokens: list[tokenize.TokenInfo],
    in_fstring: list[bool],
    edits: list[Edit],
) -> list[Edit]:
    """The first bracket of a line that holds three or more items on that line, one item a
    line, aligned under the first."""
    breaks: list[Edit] = []
    broken_lines: set[int] = set()
    for index, token in enumerate(tokens):
        if in_fstring[index] or token.type != tokenize.OP or token.string not in OPENING:
            continue
        line = token.start[0]
        if line in broken_lines:
            continue
        depth, commas, close = 0, [], None
        for inner in range(index + 1, len(tokens)):
            each = tokens[inner]
            if each.type == tokenize.OP and each.string in OPENING:
                depth += 1
            elif each.type == tokenize.OP and each.string in CLOSING:
                if depth == 0:
                    close = inner
                    break
                depth -= 1
            elif each.type == tokenize.OP and each.string == "," and depth == 0:
                commas.append(inner)
        if close is None or tokens[close].start[0] != line or index + 1 == close:
            continue
        commas = [c for c in commas if c + 1 != close]  # no break before a trailing comma
        if len(commas) < 2:
            continue
        first = source.of_token(tokens[index + 1].start)
        line_start = source.starts[line - 1]
        inserted = sum(
            len(e.text) - (e.end - e.start)
            for e in edits
            if line_start <= e.start and e.end <= first
        )
        column = first - line_start + inserted
        for comma in commas:
            start, end = (
                source.of_token(tokens[comma].end),
                source.of_token(tokens[comma + 1].start),
            )
            breaks.append(Edit(start, end, "\n" + " " * column))
        broken_lines.add(line)
    return breaks


def _blank_lines(source: Source, tokens: list[tokenize.TokenInfo]) -> list[Edit]:
    """A blank line after each docstring's line."""
    docstrings = {
        (each.lineno, each.col_offset) for each in docstring_statements(ast.parse(source.text))
    }
    edits = []
    for index, token in enumerate(tokens):
        if token.type != tokenize.STRING:
            continue
        line, column = token.start
        byte_column = len(source.lines[line - 1][:column].encode("utf-8"))
        if (line, byte_column) not in docstrings:
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is not None and following.type == tokenize.NEWLINE:
            end = source.of_token(following.end)
            edits.append(Edit(end, end, "\n"))
    return edits
