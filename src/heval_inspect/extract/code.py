"""The tokens, syntax trees and names of code that every step reads, and the check that decides
between readings: does prefix + code + suffix compile.
"""

import ast
import builtins
import io
import re
import tokenize
import warnings
from collections.abc import Iterator

THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
THINK_END = "</think>"
# An opening fence at the start of a line, with its language tag (possibly empty).
OPENING_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n", re.MULTILINE)
FENCE = "```"
PYTHON_TAGS = ("python", "py", "python3", "")
# A top-level function's `def` line, with the function's name.
FUNCTION_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
# A function or class definition (maybe decorated) where a statement starts.
DEFINITION = re.compile(r"(?:@[^\n]*\n)*(?:async[ \t]+)?(?:def|class)\b")
# A line after the first that starts with code at column 0: maybe a top-level statement.
CODE_AT_COLUMN_0 = re.compile(r"\n[^\s#]")
# Lines at the end that are blank or a comment at column 0, with the line break before them.
TRAILING_BLANK_OR_COMMENT_LINES = re.compile(r"(?:\n[ \t]*|\n#[^\n]*)*\Z")
BLANK_LINES = re.compile(r"(?:[ \t]*\n)*")
# Tokens that are not code: what lines hold besides it, and the ends of blocks and of the text.
LINE_TOKENS = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT)
NOT_CODE = (*LINE_TOKENS, tokenize.DEDENT, tokenize.ENDMARKER)
# The tokens that open and close an f-string from Python 3.12 on (before, it is one STRING).
FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
FSTRING_END = getattr(tokenize, "FSTRING_END", -1)
# Names a program reads without defining them that are no one's to define.
BUILTINS = frozenset(dir(builtins))


def functions_defined(code: str) -> set[str]:
    """The names of the top-level functions the code defines (by their `def` lines)."""
    return {match[1] for match in FUNCTION_DEF.finditer(code)}


def function_holding_the_gap(prefix: str) -> str | None:
    """The name of the prefix's last top-level function: the one that holds the gap."""
    functions = list(FUNCTION_DEF.finditer(prefix))
    return functions[-1][1] if functions else None


def syntax_tree(code: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning of code that parses
        try:
            return ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(decorator.lineno for decorator in decorators)])


def statement_text(code: str, node: ast.stmt) -> str:
    """The lines of a top-level statement, from its first decorator, without the last one's
    line break."""
    starts = line_offsets(code)
    end = node.end_lineno or node.lineno
    return code[starts[first_line(node) - 1] : starts[end] - 1 if end < len(starts) else None]


def names_in(node: ast.AST) -> set[str]:
    """The global names a statement may read: those it reads and does not bind inside itself
    (a definition's local names, imports within it)."""
    read: set[str] = set()
    bound: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            (read if isinstance(inner.ctx, ast.Load) else bound).add(inner.id)
        elif isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif isinstance(inner, ast.alias):
            bound.add((inner.asname or inner.name).split(".")[0])
        elif inner is not node and isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
            bound.add(inner.name)
    return read - bound


def dump(node: ast.stmt) -> str:
    """The statement's syntax tree without the docstrings of its definitions."""
    copy = ast.parse(ast.unparse(node)).body[0] if _has_docstrings(node) else node
    for definition in ast.walk(copy):
        if _docstring_of(definition) is not None:
            body = definition.body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
            definition.body = body  # type: ignore[attr-defined]
    return ast.dump(copy)


def _has_docstrings(node: ast.AST) -> bool:
    return any(_docstring_of(definition) is not None for definition in ast.walk(node))


def _docstring_of(node: ast.AST) -> ast.Expr | None:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return first if isinstance(first.value.value, str) else None
    return None


def indented(code: str, indentation: str) -> str:
    return "".join(
        indentation + line if line.strip() else line for line in code.splitlines(keepends=True)
    )


def line_offsets(text: str) -> list[int]:
    return [0] + [match.end() for match in re.finditer("\n", text)]


def uses(code: str, names: set[str]) -> bool:
    return any(re.search(rf"\b{re.escape(name)}\b", code) for name in names)


def names_bound(statement: str) -> set[str]:
    """The names a top-level definition, import or assignment binds (none for other code)."""
    module = syntax_tree(statement)
    bound = [bound_by(node) for node in module.body] if module else []
    return set().union(*bound) if bound and all(bound) else set()


def bound_by(node: ast.stmt) -> set[str]:
    """The names a definition, import or assignment binds (none for other code)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names} - {"*"}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {target.id for target in targets if isinstance(target, ast.Name)}
    return set()


def top_level_statements(program: str) -> Iterator[int]:
    """The offsets of the lines where top-level statements start (a decorated definition at its
    first decorator), as far as the program tokenizes."""
    line_starts = line_offsets(program)
    statement_starts, decorated = True, False
    try:
        for token in tokens_of(program):
            if token.type == tokenize.NEWLINE:
                statement_starts = True
            elif token.type not in NOT_CODE:
                if statement_starts and token.start[1] == 0:
                    if not decorated:
                        yield line_starts[token.start[0] - 1]
                    decorated = token.string == "@"
                statement_starts = False
    except (tokenize.TokenError, SyntaxError):
        return


def tokens_of(text: str) -> Iterator[tokenize.TokenInfo]:
    """The text's tokens, up to an unterminated one-line string, where they end with a
    TokenError under every Python: from 3.12 on the tokenizer stops there, where 3.11's makes
    the quote an error token and goes on, so an answer would be read differently by the
    Python the eval runs under."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.ERRORTOKEN and token.string[:1] in ("'", '"'):
            raise tokenize.TokenError("unterminated string literal", token.start)
        yield token


def open_at_end(code: str) -> bool:
    """Whether the code stops inside brackets, a string or a continued line."""
    try:
        for _ in tokens_of(code):
            pass
    except tokenize.TokenError as error:
        # "EOF in multi-line statement / string", or an unterminated one-line string or
        # f-string; not a malformed number ("invalid decimal literal", Python 3.12 on), which
        # leaves nothing open.
        message = str(error.args[0]) if error.args else ""
        return "EOF" in message or message.startswith("unterminated")
    except SyntaxError:  # e.g. inconsistent dedent: not a sign of an open statement
        return False
    return False


def first_that_compiles(readings: list[str], prefix: str, suffix: str) -> str:
    if len(readings) == 1:
        return readings[0]
    for reading in readings:
        if compiles(prefix + reading + suffix):
            return reading
    return readings[0]


def compiles(program: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning of code that compiles: not ours to show
        try:
            # Compiled to test its syntax (as the interpreter will), never run: it runs only in
            # the sandbox.
            compile(
                program, "<program>", "exec", dont_inherit=True
            )  # inspect-evals-lint: ignore[host_code_execution] -- compiled only, never run
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True
