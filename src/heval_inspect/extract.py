"""From a model's answer to the code that goes into the gap (pure functions, no model, no sandbox).

A chat answer's code is read as the answer means it: whatever its layout, the program that runs
is prefix + middle + suffix with the answer's code for the gap, or, where the answer restates the
function in its own way, that function as it wrote it. Chat answers (`middle_from_chat`), in order:

1. CRLF becomes LF; `<think>...</think>` blocks are dropped (and anything before a lone
   `</think>`), with the line breaks that separated them from the answer.
2. The code is a fenced block tagged `python`, `py`, `python3` or untagged (else the first fenced
   block; an unclosed fence runs to the end; no fence: the whole answer): of several, the last
   that defines the function that holds the gap (the prefix's last top-level `def`), else the
   first that defines no top-level function the prompt lacks (not a recalled problem's), else the
   first. So analogical or few-shot answers, which solve other problems in blocks of their own
   first, give this problem's block; a block of example usage after the solution is not taken.
   The line break that ends the block's last line before a closing fence on a line of its own is
   the fence's.
3. Code that parses and defines that function at top level restates it (`def fix_spaces(text):`
   after `import re`). Kept with it: the imports, helpers and constants it defines (before or
   after the function) that the function, or what else is kept, uses, and definitions that change
   one of the prompt's (the tests may call them); not what the prompt already has, nor code that
   only shows the function in use (`print(...)`, `if __name__ ...`, asserts).
   - A function that fits the prompt's (the same parameters and defaults, type hints aside; its
     body indented as the prompt's; no decorator) is aligned with the prompt as in step 4; what
     is kept with it goes after it when no code follows the gap (`import re` after the body), else
     inside the middle, at the start of its first line where the program compiles.
   - One that does not fit (`def do_algebra(operators, operands):` for `(operator, operand)`;
     `def multiply(a, b):` with a two-space or tab body; a decorator) runs as written when no code
     follows the gap: the middle is the answer's code after the prompt's function (ended by `pass`
     where needed), so the answer's definitions replace the prompt's. With code after the gap,
     its indentation and parameter names are first made the prompt's, where that keeps its
     meaning (no new name it already uses, no f-string, global or pattern that names them).
4. Other code is reconciled with the code around the gap, which the model may have restated (the
   whitespace at the ends of restated lines may be gone: models strip it):
   - A restated function that holds the gap is cut off up to where the prefix ends: whatever comes
     before its `def` line, the `def` line and its docstring (the prompt's, one of its own, or
     none; so is a string statement further into the body, as HumanEval/115's description after
     an import), and the prefix's part of its body. Else a repeated tail of the prefix is (from the
     start of a line: the gap's own line, earlier lines, the whole program).
   - Top-level code after the function that holds the gap (an `if __name__` block, example calls,
     tests), with the comments and blank lines before it, is cut off when the suffix has none;
     when nothing follows the gap, definitions of helpers the code calls stay.
   - A repeated head of the suffix (up to the end of a line) is cut off; after a restated
     function or program, all of the suffix, however its final line breaks are shown.
5. Whitespace is never stripped. Two things an answer cannot show are decided by the program
   prefix + code + suffix: whether the code ends its last line (a fence always does, and chat
   APIs often drop a final line break), and, when the gap starts after indentation, whether the
   answer repeated that indentation. A head of the suffix that starts within a line of the
   answer is a reading too: the first when the answer restated lines of the prefix and shows all
   of the suffix (the rest of the program), unless that is one line that starts within the
   indentation of the answer's last line; else the second. The readings are tried in order and
   the first whose program compiles is used (compile only: nothing runs); if none compiles, the
   first.

FIM completions (`middle_from_fim`), and completion files (`-T samples=`, `heval-inspect score`),
are used as they are (a FIM completion up to the first stop sequence): extraction is for chat
answers.
"""

import ast
import builtins
import io
import re
import textwrap
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

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


def middle_from_chat(answer: str, prefix: str, suffix: str) -> str:
    """The code for the gap between `prefix` and `suffix`, from a chat model's answer."""
    code, others = _code_and_other_blocks(answer.replace("\r\n", "\n"), prefix)
    restated = _restated_function(code, prefix, suffix)
    middle = reconciled(code, prefix, suffix) if restated is None else restated
    return _with_definitions_of_other_blocks(middle, others, prefix, suffix)


def middle_from_fim(completion: str, stop: tuple[str, ...]) -> str:
    """A FIM model's completion up to the first of its family's stop sequences."""
    cut = min((i for i in (completion.find(s) for s in stop) if i >= 0), default=len(completion))
    return completion[:cut]


def _code_and_other_blocks(answer: str, prefix: str) -> tuple[str, list[str]]:
    """The code a chat answer holds (steps 1 and 2), its last line break left to `reconciled`:
    of its Python blocks, the last that defines the function that holds the gap (the prefix's
    last), else the first that defines no top-level function the prefix does not (another
    problem's), else the first. And its other Python blocks."""
    thought = THINK_BLOCK.sub("", answer)
    if THINK_END in thought:
        thought = thought[thought.rindex(THINK_END) + len(THINK_END) :]
    if thought != answer:
        answer = thought.lstrip("\n")
    blocks = list(fenced_blocks(answer))
    if not blocks:
        return answer, []
    tagged = [code for tag, code in blocks if tag in PYTHON_TAGS] or [blocks[0][1]]
    function = _function_holding_the_gap(prefix)
    chosen = 0
    if function is not None and len(tagged) > 1:
        defining = [i for i, code in enumerate(tagged) if function in _functions_defined(code)]
        prompts = _functions_defined(prefix)
        others = (i for i, code in enumerate(tagged) if _functions_defined(code) <= prompts)
        chosen = defining[-1] if defining else next(others, 0)
    return tagged[chosen], tagged[:chosen] + tagged[chosen + 1 :]


def _with_definitions_of_other_blocks(
    middle: str, others: list[str], prefix: str, suffix: str
) -> str:
    """The middle with the definitions, from the answer's other blocks, of the names its program
    reads and nothing in it binds (a helper or an import the answer wrote in a block of its own;
    of two, the later), where they compile (as `_with_definitions` places them)."""
    module = _parsed(prefix + middle + suffix) if others else None
    if module is None:
        return middle
    bound = {name for node in module.body for name in _bound_by(node)} | BUILTINS
    definitions: dict[str, tuple[int, int, ast.stmt, str]] = {}
    for block, code in enumerate(others):
        for position, node in enumerate(parsed.body if (parsed := _parsed(code)) else []):
            for name in _bound_by(node) - bound:
                definitions[name] = (block, position, node, code)
    missing, chosen = _names_in(module) - bound, set()
    while missing & set(definitions):
        found = {definitions[name][:2]: definitions[name] for name in missing & set(definitions)}
        chosen |= set(found.values())
        read = set().union(*(_names_in(node) for _, _, node, _ in found.values()))
        bound |= set().union(*(_bound_by(node) for _, _, node, _ in found.values()))
        missing = read - bound
    if not chosen:
        return middle
    texts = [
        _statement_text(code, node) for _, _, node, code in sorted(chosen, key=lambda d: d[:2])
    ]
    return _with_definitions(middle, "\n\n".join(texts) + "\n", prefix, suffix)


def _functions_defined(code: str) -> set[str]:
    """The names of the top-level functions the code defines (by their `def` lines)."""
    return {match[1] for match in FUNCTION_DEF.finditer(code)}


def _function_holding_the_gap(prefix: str) -> str | None:
    """The name of the prefix's last top-level function: the one that holds the gap."""
    functions = list(FUNCTION_DEF.finditer(prefix))
    return functions[-1][1] if functions else None


def fenced_blocks(answer: str) -> Iterator[tuple[str, str]]:
    """(language tag, code) of each fenced block, in order."""
    position = 0
    while opening := OPENING_FENCE.search(answer, position):
        start = opening.end()
        end = answer.find(FENCE, start)
        if end == -1:  # unclosed: the code runs to the end of the answer
            yield opening.group(1).lower(), answer[start:]
            return
        code = answer[start:end]
        line_start = code.rfind("\n") + 1
        if line_start and not code[line_start:].strip(" \t"):
            # The closing fence is on a line of its own: that line's break is the fence's.
            code = code[: line_start - 1]
        yield opening.group(1).lower(), code
        position = end + len(FENCE)


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
    return _first_that_compiles(readings, prefix, suffix)


@dataclass(frozen=True)
class _Frame:
    """The function that holds the gap, as the prompt has it, and the code before it."""

    arguments: ast.arguments
    is_async: bool
    indentation: str  # of the function's body, as the prompt indents it
    bound: frozenset[str]  # the names the prompt's top-level code before it binds
    statements: frozenset[str]  # that code's statements, as `_dump` gives them


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
        end = next(t for t in _tokens(prefix[start:]) if t.type == tokenize.NEWLINE).end
        header = prefix[start : start + _line_starts(prefix[start:])[end[0] - 1] + end[1]]
        function = ast.parse(header + "\n    pass\n").body[0]
    except (StopIteration, tokenize.TokenError, SyntaxError, ValueError, IndexError):
        return None
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = re.compile(r"\n([ \t]*)\S").search(prefix, start + len(header) - 1)
    before = _parsed(prefix[:start])
    statements = before.body if before else []
    return _Frame(
        arguments=function.args,
        is_async=isinstance(function, ast.AsyncFunctionDef),
        indentation=body[1] if body else "",
        bound=frozenset(name for node in statements for name in _bound_by(node)),
        statements=frozenset(_dump(node) for node in statements),
    )


def _restated_function(code: str, prefix: str, suffix: str) -> str | None:
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
    name = _function_holding_the_gap(prefix)
    module = _parsed(code)
    dedented = textwrap.dedent(code)
    # A block indented as a whole (under an item of a list in the answer's prose).
    if module is None and dedented != code and (module := _parsed(dedented)) is not None:
        code = dedented
    if module is None and frame is not None:
        # Code after the function that is not Python (a pasted `>>>` session, prose): the code
        # up to the last top-level statement from which on it does not parse.
        for start in reversed(list(_top_level_statements(code))):
            if (module := _parsed(code[:start])) is not None:
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
    text = code[_line_starts(code)[_first_line(function) - 1] :]
    fits = _fits(function, code, frame)
    if not fits and not suffix.strip():
        as_written = [_statement_text(code, module.body[i]) for i in sorted(kept | {index})]
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
    definitions = "\n\n".join(_statement_text(code, module.body[i]) for i in extra) + "\n"
    return _with_definitions(middle, definitions, prefix, suffix)


def _parsed(code: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning of code that parses
        try:
            return ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(decorator.lineno for decorator in decorators)])


def _statement_text(code: str, node: ast.stmt) -> str:
    """The lines of a top-level statement, from its first decorator, without the last one's
    line break."""
    starts = _line_starts(code)
    end = node.end_lineno or node.lineno
    return code[starts[_first_line(node) - 1] : starts[end] - 1 if end < len(starts) else None]


def _definitions_kept(body: list[ast.stmt], index: int, frame: _Frame) -> set[int]:
    """The top-level statements besides the function (at `index`) that stay: definitions,
    imports and assignments of names that the function, or what else stays, uses, and
    definitions that change one of the prompt's (its tests may use them), unless the prompt has
    the same statement."""
    used = _names_in(body[index])
    kept: set[int] = set()
    while True:
        more = set()
        for position, node in enumerate(body):
            bound = _bound_by(node)
            if (
                position == index
                or position in kept
                or not bound
                or _dump(node) in frame.statements
            ):
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
            used |= _names_in(body[position])


def _names_in(node: ast.AST) -> set[str]:
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


def _dump(node: ast.stmt) -> str:
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


def _fits(function: ast.FunctionDef | ast.AsyncFunctionDef, code: str, frame: _Frame) -> bool:
    """Whether the function, aligned with the prompt's, means what the answer wrote."""
    line = code[_line_starts(code)[function.body[0].lineno - 1] :]
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
        if _compiles(prefix + middle + suffix):
            return middle
    return None


def _with_definitions(middle: str, definitions: str, prefix: str, suffix: str) -> str:
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
            lines = _indented(definitions, indentation)
            candidates.append(lines[len(tail) :] + indentation[len(tail) :] + middle[len(first) :])
        for match in re.finditer(r"\n([ \t]*)(?=\S)", middle):
            lines = _indented(definitions, match[1])
            candidates.append(middle[: match.start() + 1] + lines + middle[match.start() + 1 :])
    return next((c for c in candidates if _compiles(prefix + c + suffix)), middle)


def _indented(code: str, indentation: str) -> str:
    return "".join(
        indentation + line if line.strip() else line for line in code.splitlines(keepends=True)
    )


def _in_frame(text: str, frame: _Frame) -> str | None:
    """The restated function (text from its first line) with the prompt's indentation and
    parameter names, the same function; None where it cannot be made so, or still does not
    fit."""
    module = _parsed(text)
    if module is None or not frame.indentation:
        return None
    function = module.body[0]
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    line = text[_line_starts(text)[function.body[0].lineno - 1] :]
    unit = line[: len(line) - len(line.lstrip(" \t"))]
    if unit != frame.indentation:
        reindented = _reindented(text, unit, frame.indentation) if unit else None
        module = _parsed(reindented) if reindented is not None else None
        if reindented is None or module is None:
            return None
        text, function = reindented, module.body[0]
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    renaming = _renaming(function.args, frame.arguments)
    if renaming:
        renamed = _renamed(text, function, renaming)
        module = _parsed(renamed) if renamed is not None else None
        if renamed is None or module is None:
            return None
        text, function = renamed, module.body[0]
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    # The header keeps the answer's names: the prompt's stands for it.
    header_fits = (
        function.decorator_list == [] and _renaming(function.args, frame.arguments) is not None
    )
    body = text[_line_starts(text)[function.body[0].lineno - 1] :]
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
        for token in _tokens(text):
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


def _line_starts(text: str) -> list[int]:
    return [0] + [match.end() for match in re.finditer("\n", text)]


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
    for start in _line_starts(prefix):
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
    tokens = _tokens(text[start:])
    try:
        end = next(token for token in tokens if token.type == tokenize.NEWLINE)  # the header's
        first = next(token for token in tokens if token.type not in LINE_TOKENS)
        if first.type == tokenize.STRING and (after := next(tokens)).type == tokenize.NEWLINE:
            end = after  # a docstring's
    except (StopIteration, tokenize.TokenError, SyntaxError):
        return None
    row, column = end.start
    return start + _line_starts(text[start:])[row - 1] + column


def _without_string_statements(body: str) -> tuple[str, list[int]]:
    """The body without the lines of its statements that are only a string, and where each
    character left stands in the body. As far as the body tokenizes (a prefix stops anywhere)."""
    removed: list[tuple[int, int]] = []
    line_starts = _line_starts(body)
    tokens = _tokens(body)
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
    starts = list(_top_level_statements(program))
    enclosing = [start for start in starts if start <= gap_line]  # the gap is in the last
    if not enclosing or enclosing[-1] == gap_line or not DEFINITION.match(program, enclosing[-1]):
        return code
    after = starts[len(enclosing) :]
    if not after:
        return code
    statements = [
        program[start:end] for start, end in zip(after, [*after[1:], len(program)], strict=True)
    ]
    bound = [_names_bound(statement) if not suffix.strip() else set() for statement in statements]
    function = program[len(prefix) : after[0]]
    stays, kept = [False] * len(statements), function
    while used := [i for i, names in enumerate(bound) if not stays[i] and _uses(kept, names)]:
        for index in used:
            stays[index] = True
        kept = function + "".join(s for s, stay in zip(statements, stays, strict=True) if stay)
    # The pattern matches at the end of any text (the empty string at least).
    return code if all(stays) else TRAILING_BLANK_OR_COMMENT_LINES.sub("", kept, count=1)


def _uses(code: str, names: set[str]) -> bool:
    return any(re.search(rf"\b{re.escape(name)}\b", code) for name in names)


def _names_bound(statement: str) -> set[str]:
    """The names a top-level definition, import or assignment binds (none for other code)."""
    module = _parsed(statement)
    bound = [_bound_by(node) for node in module.body] if module else []
    return set().union(*bound) if bound and all(bound) else set()


def _bound_by(node: ast.stmt) -> set[str]:
    """The names a definition, import or assignment binds (none for other code)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names} - {"*"}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {target.id for target in targets if isinstance(target, ast.Name)}
    return set()


def _top_level_statements(program: str) -> Iterator[int]:
    """The offsets of the lines where top-level statements start (a decorated definition at its
    first decorator), as far as the program tokenizes."""
    line_starts = _line_starts(program)
    statement_starts, decorated = True, False
    try:
        for token in _tokens(program):
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
    return starts_line and bool(last_line.strip()) and not _open_at_end(code_before_suffix)


def _tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    """The text's tokens, up to an unterminated one-line string, where they end with a
    TokenError under every Python: from 3.12 on the tokenizer stops there, where 3.11's makes
    the quote an error token and goes on, so an answer would be read differently by the
    Python the eval runs under."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.ERRORTOKEN and token.string[:1] in ("'", '"'):
            raise tokenize.TokenError("unterminated string literal", token.start)
        yield token


def _open_at_end(code: str) -> bool:
    """Whether the code stops inside brackets, a string or a continued line."""
    try:
        for _ in _tokens(code):
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


def _first_that_compiles(readings: list[str], prefix: str, suffix: str) -> str:
    if len(readings) == 1:
        return readings[0]
    for reading in readings:
        if _compiles(prefix + reading + suffix):
            return reading
    return readings[0]


def _compiles(program: str) -> bool:
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
