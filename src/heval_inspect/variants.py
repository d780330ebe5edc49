"""Semantics-preserving variants of every task: is a model's score memory or skill?

HumanEval is in most training sets, and the infilling subsets are cut from its canonical
solutions, so a model may fill a gap from memory. Each variant asks the same question in a text
the model has not seen:

- `renamed`: every identifier the problem defines (its functions, their parameters and local
  variables, the names bound in prompt, gap and suffix) gets a neutral name, the same at every
  use: in the code, in docstrings (their prose and their examples), in comments, in the tests,
  and as the entry point. Builtins, imported names, attributes, keyword arguments of functions the
  problem does not define and string contents are left alone, and so is every parameter of a
  name that some call passes as a keyword without the text saying to which function
  (`Box(value=...)`, `obj.method(value=...)`): renamed, that call would fail.
- `reformatted`: the same tokens laid out differently: the other quote style where the string
  allows it, a space inside brackets, a bracket of three or more items broken one item a line,
  a blank line after each docstring.

Both work on the whole program (prompt + gap + suffix, and for `renamed` the tests too) with the
standard library's tokenizer and parser: which name is which comes from the program's scopes
(`_Scopes`), never from matching text. The gap is then cut again where it was: each edit of the
text moves the gap's two ends by what it adds or removes before them, so the gap holds the same
lines, or the same span, of the canonical solution (`_cut`).

New names are drawn per HumanEval problem (seeded by its id and GENERATOR_VERSION), not per
task: every task of a problem shows the same renamed program, so a model that sees several of
them sees one consistent problem, and a renamed run can be read per problem as the original is.
They are words of NEUTRAL_WORDS that appear nowhere in the original problem (its texts and
tests), so a new name can meet no name the program already uses.
"""

import ast
import bisect
import builtins
import functools
import hashlib
import io
import itertools
import keyword
import random
import re
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import DataError, TaskArgumentError
from .schema import ORIGINAL, ORIGINAL_VARIANT, VariantId

VARIANTS = (ORIGINAL, "renamed", "reformatted")
# Goes up whenever a variant's text for some task changes: logs record it (and sources name it)
# so that a log is re-scored against the very variant its answers were written for.
GENERATOR_VERSION = 2

# Names that say nothing of what a value is or does; a problem defines at most a few dozen names.
_WORDS = """
acorn alder amber anvil aspen auburn azure badger balsam basalt beacon birch bison
bracken bramble breeze brook cairn canyon cedar chalk cinder clover cobalt comet copper
coral cove crane crest cypress dahlia delta dune eagle ember falcon fennel fern
fjord flint garnet geyser ginger glacier granite gravel harbor hazel heath heron hickory
holly indigo iris ivory jasper juniper kelp kestrel lagoon larch lark laurel lichen
linden lotus lupine magpie mallow maple marble marsh meadow mica mint moss nectar
nutmeg oak obsidian ochre onyx opal orchid osprey otter oyster pebble pelican pepper
pine plover poplar quail quartz quill raven reed ridge robin rowan saffron sage
sapphire sequoia shale sorrel sparrow spruce starling summit tamarack tansy teal thistle thrush
thyme topaz tundra tulip umber valley violet walnut willow wren yarrow yew zephyr
zinnia
"""
NEUTRAL_WORDS = tuple(_WORDS.split())
# In docstring prose and comments, the English one-letter words: a problem's parameter `a` is
# not told from the article there, so prose keeps them (doctest examples are code: renamed).
ENGLISH_ONE_LETTER_WORDS = frozenset({"a", "A", "I"})

_LAYOUT = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                     tokenize.ENDMARKER})  # fmt: skip
_OPENING, _CLOSING = "([{", ")]}"


class VariantError(DataError):
    """A problem's variant cannot be built (its program does not parse, say)."""


@dataclass(frozen=True)
class Variant:
    """A task's problem record as a variant, and what it changed."""

    record: dict
    renames: dict[str, str]  # original name -> new name (renamed; empty otherwise)
    identifiers: int  # distinct identifiers renamed
    tokens: int  # tokens of prompt + gap + suffix whose text or layout before them changed


def check_variant(variant: Any) -> VariantId:
    """The variant argument, checked (one of VARIANTS): the variant this version builds."""
    if variant not in VARIANTS:
        raise TaskArgumentError(
            f"variant={variant!r}: choose from {', '.join(VARIANTS)} (e.g. -T variant=renamed)."
        )
    return ORIGINAL_VARIANT if variant == ORIGINAL else VariantId(str(variant), GENERATOR_VERSION)


def make_variant(record: Mapping[str, Any], variant: str) -> Variant:
    """One problem record (task_id, prompt, canonical_solution, suffix, test, entry_point) as a
    variant; `original` is the record itself."""
    check_variant(variant)
    if variant == ORIGINAL:
        return Variant(dict(record), {}, 0, 0)
    prompt, middle = record["prompt"], record["canonical_solution"]
    suffix = record.get("suffix", "")
    text = prompt + middle + suffix
    test, entry_point = record["test"], record["entry_point"]
    seed = problem_seed(str(record["task_id"]))
    try:
        built = _built(variant, text, test, entry_point, seed)
    except (SyntaxError, tokenize.TokenError, ValueError) as error:
        raise VariantError(
            f"{record['task_id']}: cannot build its {variant} variant: its program (prompt + "
            f"canonical solution + suffix, and its tests) is not Python this interpreter parses "
            f"({error})."
        ) from error
    new_prompt, new_middle, new_suffix = _cut(
        text, len(prompt), len(prompt) + len(middle), list(built.edits)
    )
    new_record = dict(record) | {
        "prompt": new_prompt,
        "canonical_solution": new_middle,
        "test": built.test,
        "entry_point": built.entry_point,
    }
    if "suffix" in record:
        new_record["suffix"] = new_suffix
    renames = dict(built.renames)
    return Variant(new_record, renames, len(renames), built.tokens)


@dataclass(frozen=True)
class _Built:
    """A problem's variant before its gap is cut: the same for every task of the problem."""

    edits: tuple["_Edit", ...]  # of prompt + gap + suffix
    test: str
    entry_point: str
    renames: tuple[tuple[str, str], ...]
    tokens: int


@functools.lru_cache(maxsize=64)
def _built(variant: str, text: str, test: str, entry_point: str, seed: str) -> _Built:
    """The edits of a problem's program (the tasks of a problem share it: built once), checked."""
    if variant == "renamed":
        renames, edits, test_edits = _renaming(text, test, entry_point, seed)
    else:
        renames, edits, test_edits = {}, _reformatting(text), []
    edited = _applied(text, edits)
    new_test = _applied(test, test_edits)
    new_entry_point = renames.get(entry_point, entry_point)
    _check(variant, (text, test, entry_point), (edited, new_test, new_entry_point), renames)
    renamed = tuple(sorted(renames.items()))
    return _Built(tuple(edits), new_test, new_entry_point, renamed, _tokens_changed(text, edited))


def problem_seed(task_id: str) -> str:
    """What a task's new names are drawn by: its HumanEval problem ("HumanEval/12" of
    "MultiLineInfilling/HumanEval/12/L3_L5"), so that all tasks of a problem agree; a task of
    another problem file, by its own id."""
    parts = task_id.split("/")
    for name, number in itertools.pairwise(parts):
        if name == "HumanEval" and number.isdigit():
            return f"HumanEval/{number}"
    return task_id


def problem_names(record: Mapping[str, Any]) -> set[str]:
    """The identifiers a problem defines (see the module's docstring): those `renamed` renames."""
    text = record["prompt"] + record["canonical_solution"] + record.get("suffix", "")
    return _names_defined(text, record["test"], record["entry_point"])


def _names_defined(text: str, test: str, entry_point: str) -> set[str]:
    scopes = _Scopes(text + "\n" + test + "\n", len(text), entry_point)
    return {name for _, name, _ in scopes.renamable_occurrences()}


# --- Edits and the gap ---------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class _Edit:
    start: int
    end: int
    text: str


def _applied(text: str, edits: list[_Edit]) -> str:
    parts, at = [], 0
    for edit in sorted(edits):
        parts += [text[at : edit.start], edit.text]
        at = edit.end
    return "".join(parts) + text[at:]


def _moved(offset: int, edits: list[_Edit], gap_start: bool) -> int:
    """Where a gap's end at `offset` is once `edits` are made. Text inserted exactly at a gap's
    end stays outside the gap (the prompt keeps what is inserted at the gap's start, the suffix
    what is inserted at its end); an end inside a replaced piece (a name the gap cuts through)
    keeps its share of the piece, still inside it."""
    shift = 0
    for edit in sorted(edits):
        if edit.end < offset or (edit.end == offset and (edit.start < edit.end or gap_start)):
            shift += len(edit.text) - (edit.end - edit.start)
        elif edit.start < offset < edit.end:
            share = round((offset - edit.start) * len(edit.text) / (edit.end - edit.start))
            if len(edit.text) >= 2:
                share = min(max(share, 1), len(edit.text) - 1)
            return edit.start + shift + share
        else:
            break
    return offset + shift


def _cut(text: str, start: int, end: int, edits: list[_Edit]) -> tuple[str, str, str]:
    """Prompt, gap and suffix of the edited text, the gap where it was in `text`."""
    edited = _applied(text, edits)
    new_start = _moved(start, edits, gap_start=True)
    new_end = max(_moved(end, edits, gap_start=False), new_start)
    if start < end and new_start == new_end:
        new_start, new_end = _inside_one_name(start, end, new_start, edits)
    return edited[:new_start], edited[new_start:new_end], edited[new_end:]


def _inside_one_name(start: int, end: int, new_start: int, edits: list[_Edit]) -> tuple[int, int]:
    """The new ends of a gap that lies inside one renamed name, where both ends' shares of the
    new, shorter name fell on the same letter: the gap keeps a letter of it (an empty gap would
    make nothing the right answer), with a letter of the name before and after it where the new
    name has three or more, as the old name had around the gap."""
    piece = next((e for e in edits if e.start < start and end < e.end), None)
    if piece is None or len(piece.text) < 2:
        return new_start, new_start
    piece_start = _moved(piece.start, edits, gap_start=True)  # where the new name starts
    share = min(new_start - piece_start, max(len(piece.text) - 2, 1))
    return piece_start + share, piece_start + share + 1


class _Source:
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


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


# --- renamed -------------------------------------------------------------------------------


@dataclass(eq=False)
class _Scope:
    kind: str  # "module", "function" (functions, lambdas, comprehensions) or "class"
    parent: "_Scope | None"
    comprehension: bool = False
    bound: dict[str, list[int]] = field(default_factory=dict)  # name -> where it is bound
    imported: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    functions: dict[str, list[str]] = field(default_factory=dict)  # def name -> parameters
    parameters: set[str] = field(default_factory=set)  # a function's own, bound by its calls

    def bind(self, name: str, offset: int) -> None:
        self.bound.setdefault(name, []).append(offset)


class _Scopes(ast.NodeVisitor):
    """Each name of a program, where it is written, and the scope whose binding it is, as
    Python resolves it (local, enclosing function, global, else builtin); `problem_end`: where
    the problem's text ends (the tests follow, then check(entry_point))."""

    def __init__(self, program: str, problem_end: int, entry_point: str):
        self.source = _Source(program)
        self.problem_end = problem_end
        self.entry_point = entry_point
        self.candidate: tuple[_Scope, str] | None = None  # the tests' check(candidate)
        self.tokens = [
            t for t in _tokens(program) if t.type == tokenize.NAME or t.type == tokenize.OP
        ]
        self.token_offsets = [self.source.of_token(t.start) for t in self.tokens]
        self.module = _Scope("module", None)
        self.scope = self.module
        # (scope where written, name, offset): each place a name is written.
        self.occurrences: list[tuple[_Scope, str, int]] = []
        # (scope of the call, function's name, keyword, offset): f(keyword=...).
        self.keywords: list[tuple[_Scope, str, str, int]] = []
        # The keywords of calls whose callee is no name (`obj.method(k=...)`, `f()(k=...)`).
        self.untraced_keywords: set[str] = set()
        self.visit(ast.parse(program))
        self.kept_parameters = self._kept_parameters()

    # Where names are written.

    # ast.AST declares no position, but every node placed here (statements, expressions,
    # arguments, handlers, aliases) has one.
    def _offset(self, node: ast.AST) -> int:
        return self.source.of_node(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def _end(self, node: ast.AST) -> int:
        end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return self.source.of_node(*end)

    def _name_after(self, offset: int, after: str | None = None) -> int:
        """The offset of the first name token from `offset` on (after the token `after`)."""
        index = bisect.bisect_left(self.token_offsets, offset)
        while index < len(self.tokens):
            token = self.tokens[index]
            if after is None and token.type == tokenize.NAME:
                return self.token_offsets[index]
            if after is not None and token.string == after:
                after = None
            index += 1
        raise ValueError(f"no name after offset {offset}")

    def _written(self, name: str, offset: int, scope: "_Scope | None" = None) -> None:
        if self.source.text[offset : offset + len(name)] != name:
            raise ValueError(f"{name!r} is not where the parser puts it (offset {offset})")
        self.occurrences.append((scope or self.scope, name, offset))

    def _binds(self, name: str, offset: int) -> None:
        scope = self.scope
        if name in scope.declared_global:
            self.module.bind(name, offset)
        elif name not in scope.declared_nonlocal:
            scope.bind(name, offset)

    def _inside(self, scope: _Scope, body: Sequence[ast.AST] | ast.AST) -> None:
        outer, self.scope = self.scope, scope
        for node in body if isinstance(body, Sequence) else [body]:
            self.visit(node)
        self.scope = outer

    # Scopes.

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        offset = self._name_after(self._offset(node), after="def")
        self._binds(node.name, offset)
        self._written(node.name, offset)
        for each in node.decorator_list:
            self.visit(each)
        every = [*node.args.posonlyargs, *node.args.args, node.args.vararg,
                 *node.args.kwonlyargs, node.args.kwarg]  # fmt: skip
        self.scope.functions[node.name] = [each.arg for each in every if each]
        self._arguments(node.args, node.returns)
        body = self._function_body(node.args, node.body)
        if self.scope is self.module and node.name == "check" and node.args.args:
            # The harness calls check(entry_point): `candidate(x=...)` in the tests passes the
            # entry point's parameter x.
            self.candidate = (body, node.args.args[0].arg)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments(node.args, None)
        self._function_body(node.args, node.body)

    def _arguments(self, arguments: ast.arguments, returns: ast.AST | None) -> None:
        """What a function's header evaluates where it is defined: defaults, annotations."""
        for default in [*arguments.defaults, *arguments.kw_defaults]:
            if default is not None:
                self.visit(default)
        for each in [*arguments.posonlyargs, *arguments.args, arguments.vararg,
                     *arguments.kwonlyargs, arguments.kwarg]:  # fmt: skip
            if each is not None and each.annotation is not None:
                self.visit(each.annotation)
        if returns is not None:
            self.visit(returns)

    def _function_body(
        self, arguments: ast.arguments, body: Sequence[ast.stmt] | ast.expr
    ) -> _Scope:
        scope = _Scope("function", self.scope)
        for each in [*arguments.posonlyargs, *arguments.args, arguments.vararg,
                     *arguments.kwonlyargs, arguments.kwarg]:  # fmt: skip
            if each is not None:
                scope.bind(each.arg, self._offset(each))
                scope.parameters.add(each.arg)
                self._written(each.arg, self._offset(each), scope)
        self._inside(scope, body)
        return scope

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        offset = self._name_after(self._offset(node), after="class")
        self._binds(node.name, offset)
        self._written(node.name, offset)
        for each in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(each)
        self._inside(_Scope("class", self.scope), node.body)

    def _comprehension(self, node: Any, parts: list[ast.AST]) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        scope = _Scope("function", self.scope, comprehension=True)
        outer, self.scope = self.scope, scope
        for index, generator in enumerate(generators):
            self.visit(generator.target)
            if index:
                self.visit(generator.iter)
            for condition in generator.ifs:
                self.visit(condition)
        for part in parts:
            self.visit(part)
        self.scope = outer

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])

    # Bindings and uses.

    def visit_Name(self, node: ast.Name) -> None:
        offset = self._offset(node)
        if not isinstance(node.ctx, ast.Load):
            self._binds(node.id, offset)
        self._written(node.id, offset)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        # A walrus in a comprehension binds in the scope the comprehension is in.
        scope = self.scope
        while scope.comprehension and scope.parent is not None:
            scope = scope.parent
        offset = self._offset(node.target)
        if node.target.id in scope.declared_global:
            self.module.bind(node.target.id, offset)
        elif node.target.id not in scope.declared_nonlocal:
            scope.bind(node.target.id, offset)
        self._written(node.target.id, offset, scope)
        self.visit(node.value)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                name = alias.asname or alias.name.split(".")[0]
                self.scope.bind(name, self._offset(node))
                self.scope.imported.add(name)

    visit_ImportFrom = visit_Import

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        declared = (
            self.scope.declared_global
            if isinstance(node, ast.Global)
            else self.scope.declared_nonlocal
        )
        offset = self._offset(node)
        for name in node.names:
            declared.add(name)
            offset = self._name_after(offset + 1)
            self._written(name, offset)
            offset += len(name) - 1

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            start = self._end(node.type) if node.type is not None else self._offset(node)
            offset = self._name_after(start, after="as")
            self._binds(node.name, offset)
            self._written(node.name, offset)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            start = self._offset(node)
            if node.pattern is not None:
                self.visit(node.pattern)
                offset = self._name_after(self._end(node.pattern), after="as")
            else:
                offset = self._name_after(start)
            self._binds(node.name, offset)
            self._written(node.name, offset)
        elif node.pattern is not None:
            self.visit(node.pattern)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            offset = self._name_after(self._offset(node))
            self._binds(node.name, offset)
            self._written(node.name, offset)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        for each in [*node.keys, *node.patterns]:
            self.visit(each)
        if node.rest:
            last = [*node.keys, *node.patterns]
            start = max((self._end(each) for each in last), default=self._offset(node))
            offset = self._name_after(start, after="**")
            self._binds(node.rest, offset)
            self._written(node.rest, offset)

    def visit_Call(self, node: ast.Call) -> None:
        for each in node.keywords:
            if each.arg is None:
                continue
            if isinstance(node.func, ast.Name):
                self.keywords.append((self.scope, node.func.id, each.arg, self._offset(each)))
            else:
                self.untraced_keywords.add(each.arg)
        self.generic_visit(node)

    # Resolution.

    def binding(self, scope: _Scope, name: str) -> tuple[_Scope, str] | None:
        """The scope whose `name` a use in `scope` is (None: a builtin, or undefined)."""
        if name in scope.declared_global:
            return (self.module, name) if name in self.module.bound else None
        current: _Scope | None = scope
        if name in scope.declared_nonlocal:
            current = scope.parent
        elif name in scope.bound:
            return scope, name
        else:
            current = scope.parent
        while current is not None:
            if current.kind == "class" and current is not scope:
                current = current.parent
                continue
            if name in current.declared_global:
                return (self.module, name) if name in self.module.bound else None
            if name in current.bound and name not in current.declared_nonlocal:
                return current, name
            current = current.parent
        return None

    def renamable(self, scope: _Scope, name: str) -> bool:
        """Whether a binding is one the problem defines and `renamed` renames: bound in the
        problem's text, in a module or function scope (a class's names are attributes), not
        by an import, not a dunder, not a parameter that is kept (`_kept_parameters`)."""
        return self._defined(scope, name) and not (
            name in scope.parameters and name in self.kept_parameters
        )

    def _defined(self, scope: _Scope, name: str) -> bool:
        return (
            scope.kind != "class"
            and name not in scope.imported
            and not (name.startswith("__") and name.endswith("__"))
            and any(offset < self.problem_end for offset in scope.bound[name])
        )

    def _traced(self, scope: _Scope, function: str, argument: str) -> tuple[_Scope, str] | None:
        """The problem's function a call `function(argument=...)` in `scope` passes its
        argument to as that parameter, if the call's name says which (None: it does not)."""
        found = self.binding(scope, function)
        if found is not None and found == self.candidate:
            function, found = self.entry_point, self.binding(self.module, self.entry_point)
        if found and self._defined(*found) and argument in found[0].functions.get(function, []):
            return found
        return None

    def _kept_parameters(self) -> set[str]:
        """The parameter names a keyword argument may pass without the program's text saying
        to which function: a method's (`obj.method(k=...)`), a class's (`Box(k=...)` reaches
        `__init__`), one a function reached through another name or forwards with **kwargs.
        Renaming a parameter there would break that call, so every parameter of such a name
        keeps it."""
        return self.untraced_keywords | {
            argument
            for scope, function, argument, _ in self.keywords
            if self._traced(scope, function, argument) is None
        }

    def renamable_occurrences(self) -> Iterator[tuple[int, str, int]]:
        """(offset, name, length) of every place a renamable name is written, keyword
        arguments of the problem's functions included."""
        for scope, name, offset in self.occurrences:
            found = self.binding(scope, name)
            if found and self.renamable(*found):
                yield offset, name, len(name)
        for scope, function, argument, offset in self.keywords:
            if self._traced(scope, function, argument) and argument not in self.kept_parameters:
                yield offset, argument, len(argument)


def _words(text: str) -> set[str]:
    """Every identifier-like word of a text (runs of letters, digits and underscores)."""
    return {word for _, word in _word_spans(text, 0, len(text)) if word.isidentifier()}


def _word_spans(text: str, start: int, end: int) -> Iterator[tuple[int, str]]:
    """(offset, word) of each run of letters, digits and underscores in text[start:end], the
    character after a backslash skipped (an escape: `\\n` is no word `n`)."""
    index = start
    while index < end:
        char = text[index]
        if char == "\\":
            index += 2
        elif char.isalnum() or char == "_":
            stop = index
            while stop < end and (text[stop].isalnum() or text[stop] == "_"):
                stop += 1
            yield index, text[index:stop]
            index = stop
        else:
            index += 1


def _new_names(names: list[str], seed: str, taken: set[str]) -> dict[str, str]:
    """A neutral new name for each name, drawn by `seed`, none of them in `taken`."""
    rng = random.Random(hashlib.sha256(f"{seed}:{GENERATOR_VERSION}".encode()).digest())
    forbidden = taken | set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
    words = [word for word in NEUTRAL_WORDS if word not in forbidden]
    rng.shuffle(words)
    pairs = [f"{a}_{b}" for a in words for b in words if a != b]
    pool = iter(words + pairs)
    renames = {}
    for name in sorted(names):
        new = next(pool)
        if name.isupper():
            new = new.upper()
        elif name[:1].isupper():
            new = new.capitalize()
        if name.startswith("_"):
            new = "_" * (len(name) - len(name.lstrip("_"))) + new
        renames[name] = new
    return renames


def _renaming(
    text: str, test: str, entry_point: str, seed: str
) -> tuple[dict[str, str], list[_Edit], list[_Edit]]:
    """The new names, and the edits of the problem's text and of its tests."""
    program = text + "\n" + test + "\n"
    scopes = _Scopes(program, len(text), entry_point)
    occurrences = sorted(set(scopes.renamable_occurrences()))
    taken = _words(program) | _words(entry_point)
    renames = _new_names(sorted({name for _, name, _ in occurrences}), seed, taken)
    edits = [_Edit(offset, offset + length, renames[name]) for offset, name, length in occurrences]
    edits += _prose_edits(program, len(text), renames)
    test_start = len(text) + 1
    text_edits = [edit for edit in edits if edit.end <= len(text)]
    test_edits = [
        _Edit(edit.start - test_start, edit.end - test_start, edit.text)
        for edit in edits
        if edit.start >= test_start
    ]
    return renames, text_edits, test_edits


def _prose_edits(program: str, problem_end: int, renames: dict[str, str]) -> list[_Edit]:
    """The problem's names in its docstrings and comments. In doctest examples (`>>>` and `...`
    lines, which are code) every renamed name; in prose only the names of the problem's interface
    (`_interface_names`: a word the hidden solution or the tests use as a name is English there,
    "the area of the triangle"), and only as whole words (`_whole_word`), never the English
    one-letter words; never a word after a dot (an attribute)."""
    source = _Source(program)
    tree = ast.parse(program)
    spans = [
        (source.of_node(each.lineno, each.col_offset),
         source.of_node(each.end_lineno or 0, each.end_col_offset or 0))
        for each in _docstrings(tree)
    ]  # fmt: skip
    for token in _tokens(program):
        if token.type == tokenize.COMMENT:
            start = source.of_token(token.start)
            spans.append((start, start + len(token.string)))
    interface = _interface_names(program[:problem_end])
    edits = []
    for start, end in spans:
        if end > problem_end:
            continue
        for offset, word in _word_spans(program, start, end):
            if word not in renames or (offset > 0 and program[offset - 1] == "."):
                continue
            line_start = program.rfind("\n", 0, offset) + 1
            example = program[line_start:offset].lstrip().startswith((">>>", "..."))
            if example or (
                word in interface
                and word not in ENGLISH_ONE_LETTER_WORDS
                and _whole_word(program, offset, offset + len(word))
            ):
                edits.append(_Edit(offset, offset + len(word), renames[word]))
    return edits


def _interface_names(text: str) -> set[str]:
    """The names a problem's program defines at its top level: its functions and classes, the
    parameters of those functions and of the classes' methods, and its module-level names. That
    is what a HumanEval prompt shows (its hidden solution is the body of its last function, and
    no canonical solution adds a top-level statement), the same for every task of the problem."""
    names: set[str] = set()

    def top_level(statements: list[ast.stmt], in_class: bool) -> None:
        for statement in statements:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(statement.name)
                arguments = statement.args
                names.update(
                    each.arg
                    for each in (
                        *arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                        arguments.vararg, arguments.kwarg,
                    )
                    if each is not None
                )  # fmt: skip
            elif isinstance(statement, ast.ClassDef):
                names.add(statement.name)
                top_level(statement.body, in_class=True)
            elif not in_class:
                names.update(_bound_here(statement))
                for block in ("body", "orelse", "finalbody"):
                    top_level(getattr(statement, block, []), in_class)
                for handler in getattr(statement, "handlers", []):
                    top_level(handler.body, in_class)

    top_level(ast.parse(text).body, in_class=False)
    return names


def _bound_here(statement: ast.stmt) -> set[str]:
    """The names a statement binds in its own scope (not in the functions, lambdas and
    comprehensions it holds; a compound statement's blocks are the caller's to walk)."""
    found: set[str] = set()
    pending: list[ast.AST] = [
        child
        for name, child in ast.iter_fields(statement)
        if name not in ("body", "orelse", "finalbody", "handlers")
        for child in (child if isinstance(child, list) else [child])
        if isinstance(child, ast.AST)
    ]
    while pending:
        node = pending.pop()
        if isinstance(
            node, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
        ):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        pending.extend(ast.iter_child_nodes(node))
    return found


# Quote marks that join a contraction or a possessive ("there's", "n's").
_APOSTROPHES = "'\u2019"
# An abbreviation with dots: "i.e.", "e.g.", "a.k.a.".
_ABBREVIATION = re.compile(r"[^\W\d_]{1,3}\.[^\W\d_]{1,3}\.")


def _whole_word(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] stands as a word of its own in prose: not part of a contraction
    or possessive ("there's", "n's"), an abbreviation ("i.e."), or a hyphenated word ("n-th",
    "x-coordinate"; a hyphen before a digit is a minus: "n-1")."""
    before, before2 = text[start - 1 : start], text[max(0, start - 2) : max(0, start - 1)]
    after, after2 = text[end : end + 1], text[end + 1 : end + 2]
    if before in _APOSTROPHES and before2.isalpha() or after in _APOSTROPHES and after2.isalpha():
        return False
    if before == "-" and before2.isalnum() or after == "-" and after2.isalpha():
        return False
    return not _ABBREVIATION.match(text, start)


def _docstrings(tree: ast.AST) -> list[ast.Expr]:
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


# --- reformatted ---------------------------------------------------------------------------


def _reformatting(text: str) -> list[_Edit]:
    """The layout edits of a problem's text: quotes, spaces inside brackets, a bracket of three
    or more items one a line, a blank line after each docstring. Nothing inside an f-string
    changes (its format specs and `=` keep their spaces)."""
    source = _Source(text)
    tokens = _tokens(text)
    edits = []
    significant = [token for token in tokens if token.type not in _LAYOUT]
    in_fstring = _in_fstring(significant)
    for token, inside in zip(significant, in_fstring, strict=True):
        # (Python 3.12 tokenizes a string inside an f-string's braces as a string of its own.)
        if token.type == tokenize.STRING and not inside:
            flipped = _flipped_quotes(token.string)
            if flipped != token.string:
                start = source.of_token(token.start)
                edits.append(_Edit(start, start + len(token.string), flipped))
    for index, (before, after) in enumerate(itertools.pairwise(significant)):
        if in_fstring[index] or in_fstring[index + 1] or before.end != after.start:
            continue  # (tokens apart already, or on different lines)
        opens = before.type == tokenize.OP and before.string in _OPENING
        closes = after.type == tokenize.OP and after.string in _CLOSING
        if opens != closes:  # a space after "(" or before ")", not in "()"
            offset = source.of_token(before.end)
            edits.append(_Edit(offset, offset, " "))
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
    source: _Source,
    tokens: list[tokenize.TokenInfo],
    in_fstring: list[bool],
    edits: list[_Edit],
) -> list[_Edit]:
    """The first bracket of a line that holds three or more items on that line, one item a
    line, aligned under the first."""
    breaks: list[_Edit] = []
    broken_lines: set[int] = set()
    for index, token in enumerate(tokens):
        if in_fstring[index] or token.type != tokenize.OP or token.string not in _OPENING:
            continue
        line = token.start[0]
        if line in broken_lines:
            continue
        depth, commas, close = 0, [], None
        for inner in range(index + 1, len(tokens)):
            each = tokens[inner]
            if each.type == tokenize.OP and each.string in _OPENING:
                depth += 1
            elif each.type == tokenize.OP and each.string in _CLOSING:
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
            breaks.append(_Edit(start, end, "\n" + " " * column))
        broken_lines.add(line)
    return breaks


def _blank_lines(source: _Source, tokens: list[tokenize.TokenInfo]) -> list[_Edit]:
    """A blank line after each docstring's line."""
    docstrings = {(each.lineno, each.col_offset) for each in _docstrings(ast.parse(source.text))}
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
            edits.append(_Edit(end, end, "\n"))
    return edits


# --- Checks and counts ---------------------------------------------------------------------


def _tokens_changed(original: str, variant: str) -> int:
    """How many tokens (layout tokens aside) differ in text or in the layout before them."""

    def with_layout(text: str) -> list[tuple[str, str]]:
        source = _Source(text)
        rows, end = [], 0
        for token in _tokens(text):
            if token.type in _LAYOUT:
                continue
            start = source.of_token(token.start)
            rows.append((text[end:start], token.string))
            end = source.of_token(token.end)
        return rows

    before, after = with_layout(original), with_layout(variant)
    if len(before) != len(after):
        raise VariantError(f"the variant has {len(after)} tokens, the original {len(before)}")
    return sum(a != b for a, b in zip(before, after, strict=True))


def _check(
    variant: str,
    original: tuple[str, str, str],
    edited: tuple[str, str, str],
    renames: dict[str, str],
) -> None:
    """What must hold of every variant, checked as it is built (each a program's text, its
    tests and its entry point): reformatted, the same syntax tree; renamed, each name the
    problem defined now under its new name, and none of them left."""
    if variant == "reformatted":
        if ast.dump(ast.parse(original[0])) != ast.dump(ast.parse(edited[0])):
            raise VariantError("reformatting changed the program's syntax tree")
        return
    before, after = _names_defined(*original), _names_defined(*edited)
    if after != {renames[name] for name in before} or before & after:
        raise VariantError(f"renaming left {sorted(before & after)} or lost names")


# --- Problem files as variants -------------------------------------------------------------


def variant_records(records: list[dict], tag: str) -> list[dict]:
    """Records as the variant a sample's source names ("renamed-1"), built by the generator
    version that tag names, or refused."""
    variant, _, version = tag.rpartition("-")
    if variant not in VARIANTS or version != str(GENERATOR_VERSION):
        raise VariantError(_not_built_here(tag))
    return [make_variant(record, variant).record for record in records]


def _not_built_here(tag: str) -> str:
    built = ", ".join(check_variant(name).tag for name in VARIANTS[1:])
    return (
        f"These samples were made from the {tag!r} variant of their problems; this version of "
        f"heval_inspect builds {built}: re-score them with the heval_inspect version that made "
        f"them."
    )
