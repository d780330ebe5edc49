"""`renamed`: a neutral new name for every name the problem defines, at every use in
code (from the program's scopes) and, in prose (docstrings and comments), only for the names of
the problem's interface and only as whole words.
"""

import ast
import builtins
import hashlib
import keyword
import random
import re
import tokenize
from collections.abc import Iterator

from .scopes import Scopes
from .text import Edit, Source, docstring_statements, tokens_of
from .versions import GENERATOR_VERSION

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


def rename_edits(
    text: str, test: str, entry_point: str, seed: str
) -> tuple[dict[str, str], list[Edit], list[Edit]]:
    """The new names, and the edits of the problem's text and of its tests."""
    program = text + "\n" + test + "\n"
    scopes = Scopes(program, len(text), entry_point)
    occurrences = sorted(set(scopes.renamable_occurrences()))
    taken = _words(program) | _words(entry_point)
    renames = _new_names(sorted({name for _, name, _ in occurrences}), seed, taken)
    edits = [Edit(offset, offset + length, renames[name]) for offset, name, length in occurrences]
    edits += _prose_edits(program, len(text), renames)
    test_start = len(text) + 1
    text_edits = [edit for edit in edits if edit.end <= len(text)]
    test_edits = [
        Edit(edit.start - test_start, edit.end - test_start, edit.text)
        for edit in edits
        if edit.start >= test_start
    ]
    return renames, text_edits, test_edits


def _prose_edits(program: str, problem_end: int, renames: dict[str, str]) -> list[Edit]:
    """The problem's names in its docstrings and comments. In doctest examples (`>>>` and `...`
    lines, which are code) every renamed name; in prose only the names of the problem's interface
    (`_interface_names`: a word the hidden solution or the tests use as a name is English there,
    "the area of the triangle"), and only as whole words (`_whole_word`), never the English
    one-letter words; never a word after a dot (an attribute)."""
    source = Source(program)
    tree = ast.parse(program)
    spans = [
        (source.of_node(each.lineno, each.col_offset),
         source.of_node(each.end_lineno or 0, each.end_col_offset or 0))
        for each in docstring_statements(tree)
    ]  # fmt: skip
    for token in tokens_of(program):
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
                edits.append(Edit(offset, offset + len(word), renames[word]))
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
