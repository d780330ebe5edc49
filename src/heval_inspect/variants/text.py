"""A program's text as the variants edit it: offsets from the parser's and the tokenizer's
positions, its tokens and docstrings, and edits (a span and its new text) applied to it.
"""

import ast
import io
import tokenize
from dataclasses import dataclass

LAYOUT = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                     tokenize.ENDMARKER})  # fmt: skip
OPENING, CLOSING = "([{", ")]}"


@dataclass(frozen=True, order=True)
class Edit:
    start: int
    end: int
    text: str


def applied(text: str, edits: list[Edit]) -> str:
    parts, at = [], 0
    for edit in sorted(edits):
        parts += [text[at : edit.start], edit.text]
        at = edit.end
    return "".join(parts) + text[at:]


class Source:
    """A text's offsets: from the parser's (line, UTF-8 byte column) and the tokenizer's (line,
    character column) positions."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True) or [""]
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def of_node(self, line: int, byte_column: int) -> int:
        encoded = self.lines[line - 1].encode("utf-8")
        return self.starts[line - 1] + len(encoded[:byte_column].decode("utf-8"))

    def of_token(self, position: tuple[int, int]) -> int:
        line, column = position
        return self.starts[line - 1] + column if line <= len(self.lines) else len(self.text)


def tokens_of(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def docstring_statements(tree: ast.AST) -> list[ast.Expr]:
    """The docstring statements of a module and of its functions and classes."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.append(first)
    return found
