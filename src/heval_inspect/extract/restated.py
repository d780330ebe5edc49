"""Step 3: an answer that restates the function holding the gap, in its own way: kept with what
it uses, aligned with the prompt's function where it fits, else run as written.
"""

import ast
import re
import textwrap
import tokenize
from dataclasses import dataclass

from .code import (
    CODE_AT_COLUMN_0,
    FSTRING_END,
    FSTRING_START,
    FUNCTION_DEF,
    NOT_CODE,
    bound_by,
    compiles,
    dump,
    first_line,
    function_holding_the_gap,
    indented,
    line_offsets,
    names_in,
    statement_text,
    syntax_tree,
    tokens_of,
    top_level_statements,
)
from .reconcile import reconciled


@dataclass(frozen=True)
class _Frame:
    """The function that holds the gap, as the prompt has it, and the code before it."""

    arguments: ast.arguments
    is_async: bool
    indentation: str  # of the function's body, as the prompt indents it
    bound: frozenset[str]  # the names the prompt's top-level code before it binds
    statements: frozenset[str]  # that code's statements, as `dump` gives them


def _frame(prefix: str) -> _Frame | None:
    """The prompt's frame for a restated function, or None: no function holds the gap (the gap
    is in top-level code), or its header does not parse."""
    functions = list(FUNCTION_DEF.finditer(prefix))
    if not functions:
        return None
    start = functions[-1].start()
    if CODE_AT_COLUMN_0.search(prefix, start):  # top-level code after the function: not in it
        return None
    try:
        end = next(t for t in tokens_of(prefix[start:]) if t.type == tokenize.NEWLINE).end
        header = prefix[start : start + line_offsets(prefix[start:])[end[0] - 1] + end[1]]
        function = ast.parse(header + "\n    pass\n").body[0]
    except (StopIteration, tokenize.TokenError, SyntaxError, ValueError, IndexError):
        return None
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = re.compile(r"\n([ \t]*)\S").search(prefix, start + len(header) - 1)
    before = syntax_tree(prefix[:start])
    statements = before.body if before else []
    return _Frame(
        arguments=function.args,
        is_async=isinstance(function, ast.AsyncFunctionDef),
        indentation=body[1] if body else "",
        bound=frozenset(name for node in statements for name in bound_by(node)),
        statements=frozenset(dump(node) for node in statements),
    )


def restated_function(code: str, prefix: str, suffix: str) -> str | None:
    """The middle of code that restates the function that holds the gap, whole (it parses), as
    the answer means it (step 3); None for other code.

    The definitions the function needs (imports, helpers, constants; from before or after it)
    and those that change one of the prompt's are kept; code that only shows the function in
    use is not. Where the function fits the prompt's frame (its signature, but for type hints;
    its body's indentation; no decorator), its code is aligned with the prompt as any restated
    code is, and the definitions kept go after it (no code after the gap) or at the start of a
    line of the middle, where they compile. Where it does not and no code follows the gap, it
    is the answer's code as written, after the prompt's (which it replaces). With code after
    the gap, its indentation and parameter names are first brought to the prompt's.
    """
    frame = _frame(prefix)
    name = function_holding_the_gap(prefix)
    module = syntax_tree(code)
    dedented = textwrap.dedent(code)
    # A block indented as a whole (under an item of a list in the answer's prose).
    if module is None and dedented != code and (module := syntax_tree(dedented)) is not None:
        code = dedented
    if module is None and frame is not None:
        # Code after the function that is not Python (a pasted `>>>` session, prose): the code
        # up to the last top-level statement from which on it does not parse.
        for start in reversed(list(top_level_statements(code))):
            if (module := syntax_tree(code[:start])) is not None:
                code = code[:start].rstrip("\n")
                break
    if frame is None or module is None:
        return None
    found = [
        index
        for index, node in enumerate(module.body)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
    ]
    if not found:
        return None
    index = found[-1]
    function = module.body[index]
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    kept = _definitions_kept(module.body, index, frame)
    text = code[line_offsets(code)[first_line(function) - 1] :]
    fits = _fits(function, code, frame)
    if not fits and not suffix.strip():
        as_written = [statement_text(code, module.body[i]) for i in sorted(kept | {index})]
        whole = _after_the_prompts_function(
            "\n\n\n".join(as_written), prefix, suffix, frame.indentation or "    "
        )
        if whole is not None:
            return whole
    if not fits and (in_frame := _in_frame(text, frame)) is not None:
        text = in_frame
    middle = reconciled(text, prefix, suffix)
    extra = [i for i in sorted(kept) if i < index or suffix.strip()]
    if not extra:
        return middle
    definitions = "\n\n".join(statement_text(code, module.body[i]) for i in extra) + "\n"
    return with_definitions(middle, definitions, prefix, suffix)


def _definitions_kept(body: list[ast.stmt], index: int, frame: _Frame) -> set[int]:
    """The top-level statements besides the function (at `index`) that stay: definitions,
    imports and assignments of names that the function, or what else stays, uses, and
    definitions that change one of the prompt's (its tests may use them), unless the prompt has
    the same statement."""
    used = names_in(body[index])
    kept: set[int] = set()
    while True:
        more = set()
        for position, node in enumerate(body):
            bound = bound_by(node)
            if position == index or position in kept or not bound or dump(node) in frame.statements:
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound -= frame.bound  # rebinding a prompt's name to a module: the same one
                stays = bool(bound & used)
            else:
                stays = bool(bound & (used | frame.bound))
            if stays and body[index].name not in bound:  # type: ignore[attr-defined]
                more.add(position)
        if not more:
            return kept
        kept |= more
        for position in more:
            used |= names_in(body[position])


def _fits(function: ast.FunctionDef | ast.AsyncFunctionDef, code: str, frame: _Frame) -> bool:
    """Whether the function, aligned with the prompt's, means what the answer wrote."""
    line = code[line_offsets(code)[function.body[0].lineno - 1] :]
    indentation = line[: len(line) - len(line.lstrip(" \t"))]
    return (
        not function.decorator_list
        and isinstance(function, ast.AsyncFunctionDef) == frame.is_async
        and _renaming(function.args, frame.arguments) == {}
        and (not frame.indentation or indentation == frame.indentation)
    )


def _renaming(answer: ast.arguments, prompt: ast.arguments) -> dict[str, str] | None:
    """The answer's parameter names to the prompt's, where they are the same parameters (the
    same kinds, defaults and keyword-only names; type hints aside), else None."""
    positional = [*answer.posonlyargs, *answer.args], [*prompt.posonlyargs, *prompt.args]
    if (
        len(answer.posonlyargs) != len(prompt.posonlyargs)
        or len(positional[0]) != len(positional[1])
        or [a.arg for a in answer.kwonlyargs] != [a.arg for a in prompt.kwonlyargs]
        or (answer.vararg is None) != (prompt.vararg is None)
        or (answer.kwarg is None) != (prompt.kwarg is None)
        or [ast.dump(d) for d in answer.defaults] != [ast.dump(d) for d in prompt.defaults]
        or [d and ast.dump(d) for d in answer.kw_defaults]
        != [d and ast.dump(d) for d in prompt.kw_defaults]
    ):
        return None
    pairs = list(zip(*positional, strict=True))
    pairs += [
        (a, p) for a, p in [(answer.vararg, prompt.vararg), (answer.kwarg, prompt.kwarg)] if a and p
    ]
    return {a.arg: p.arg for a, p in pairs if a.arg != p.arg}


def _after_the_prompts_function(code: str, prefix: str, suffix: str, unit: str) -> str | None:
    """The answer's code as written, after the prompt's function (ended by `pass` where its
    body, or the block the gap is in, would be empty): its definitions replace the prompt's.
    None if that does not compile."""
    last_line = prefix[prefix.rstrip().rfind("\n") + 1 :]
    indentation = last_line[: len(last_line) - len(last_line.lstrip(" \t"))]
    for filler in ("", f"{indentation}{unit}pass\n", f"{indentation}pass\n"):
        middle = f"{filler}\n\n{code}\n"
        if compiles(prefix + middle + suffix):
            return middle
    return None


def with_definitions(middle: str, definitions: str, prefix: str, suffix: str) -> str:
    """The middle with the definitions the answer's function needs: after it at top level when
    no code follows the gap, else at the start of its first line where they compile (inside the
    function, which binds them there); the middle alone where they compile nowhere."""
    if not suffix.strip():
        candidates = [middle.rstrip("\n") + "\n\n\n" + definitions]
    else:
        candidates = []
        tail = prefix[prefix.rfind("\n") + 1 :]
        if not tail.strip():  # the gap starts a line, maybe after its indentation
            first = middle[: len(middle) - len(middle.lstrip(" \t"))]
            indentation = tail + first if middle.strip() else tail
            lines = indented(definitions, indentation)
            candidates.append(lines[len(tail) :] + indentation[len(tail) :] + middle[len(first) :])
        for match in re.finditer(r"\n([ \t]*)(?=\S)", middle):
            lines = indented(definitions, match[1])
            candidates.append(middle[: match.start() + 1] + lines + middle[match.start() + 1 :])
    return next((c for c in candidates if compiles(prefix + c + suffix)), middle)


def _in_frame(text: str, frame: _Frame) -> str | None:
    """The restated function (text from its first line) with the prompt's indentation and
    parameter names, the same function; None where it cannot be made so, or still does not
    fit."""
    module = syntax_tree(text)
    if module is None or not frame.indentation:
        return None
    function = module.body[0]
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    line = text[line_offsets(text)[function.body[0].lineno - 1] :]
    unit = line[: len(line) - len(line.lstrip(" \t"))]
    if unit != frame.indentation:
        reindented = _reindented(text, unit, frame.indentation) if unit else None
        module = syntax_tree(reindented) if reindented is not None else None
        if reindented is None or module is None:
            return None
        text, function = reindented, module.body[0]
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    renaming = _renaming(function.args, frame.arguments)
    if renaming:
        renamed = _renamed(text, function, renaming)
        module = syntax_tree(renamed) if renamed is not None else None
        if renamed is None or module is None:
            return None
        text, function = renamed, module.body[0]
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    # The header keeps the answer's names: the prompt's stands for it.
    header_fits = (
        function.decorator_list == [] and _renaming(function.args, frame.arguments) is not None
    )
    body = text[line_offsets(text)[function.body[0].lineno - 1] :]
    return text if header_fits and body.startswith(frame.indentation) else None


def _reindented(text: str, unit: str, new_unit: str) -> str | None:
    """The text with each line's indentation of n whole units made n new units (the lines of
    strings, and continuation lines indented otherwise, as they are); None if a statement's
    indentation is not whole units."""
    lines = text.split("\n")
    statements: set[int] = set()
    in_strings: set[int] = set()
    f_strings: list[int] = []  # the rows where the f-strings open that are open
    at_start = True
    try:
        for token in tokens_of(text):
            if token.type == tokenize.NEWLINE:
                at_start = True
            elif token.type not in NOT_CODE:
                if at_start:
                    statements.add(token.start[0] - 1)
                at_start = False
            if token.type == tokenize.STRING:
                in_strings.update(range(token.start[0], token.end[0]))
            elif token.type == FSTRING_START:  # Python 3.12+ tokenizes an f-string's parts
                f_strings.append(token.start[0])
            elif token.type == FSTRING_END:
                in_strings.update(range(f_strings.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError, IndexError):
        return None
    for row, line in enumerate(lines):
        indentation = line[: len(line) - len(line.lstrip(" \t"))]
        units = len(indentation) // len(unit)
        if row in in_strings or not line.strip() or indentation != unit * units:
            if row in statements:
                return None
            continue
        lines[row] = new_unit * units + line[len(indentation) :]
    return "\n".join(lines)


def _renamed(
    text: str, function: ast.FunctionDef | ast.AsyncFunctionDef, renaming: dict[str, str]
) -> str | None:
    """The function with its parameters renamed in its body (the header is left as it is), or
    None where a new name is in use there, or an old one is bound or read in a way renaming
    could change (a global, an import, an f-string, a pattern, an exception's name)."""
    old, new = set(renaming), set(renaming.values())
    edits: list[tuple[int, int, int, str]] = []
    for statement in function.body:
        for node in ast.walk(statement):
            names: list[str] = []
            if isinstance(node, ast.Name):
                names = [node.id]
                if node.id in renaming:
                    edits.append((node.lineno, node.col_offset, len(node.id), renaming[node.id]))
            elif isinstance(node, ast.arg):
                names = [node.arg]
                if node.arg in renaming:
                    edits.append((node.lineno, node.col_offset, len(node.arg), renaming[node.arg]))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name, "!"]
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names = [*node.names, "!"]
            elif isinstance(node, ast.alias):
                names = [node.asname or node.name.split(".")[0], "!"]
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
                names = [node.name or "", "!"]
            elif isinstance(node, ast.MatchMapping):
                names = [node.rest or "", "!"]
            elif isinstance(node, ast.JoinedStr):
                names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)] + ["!"]
            bound_otherwise = "!" in names
            if any(n in new - old for n in names) or (bound_otherwise and old & set(names)):
                return None
    lines = [line.encode() for line in text.split("\n")]
    for row, column, length, name in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:column] + name.encode() + line[column + length :]
    return "\n".join(line.decode() for line in lines)
