"""A task's record as a variant: the problem's edits built once (and checked), its gap cut
again, and problem files read as the variant a log names.
"""

import ast
import functools
import itertools
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..schema import ORIGINAL
from .gap import cut_gap
from .reformatted import layout_edits
from .renamed import rename_edits
from .scopes import names_defined
from .text import LAYOUT, Edit, Source, applied, tokens_of
from .versions import GENERATOR_VERSION, VARIANTS, Variant, VariantError, check_variant


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
    new_prompt, new_middle, new_suffix = cut_gap(
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

    edits: tuple["Edit", ...]  # of prompt + gap + suffix
    test: str
    entry_point: str
    renames: tuple[tuple[str, str], ...]
    tokens: int


@functools.lru_cache(maxsize=64)
def _built(variant: str, text: str, test: str, entry_point: str, seed: str) -> _Built:
    """The edits of a problem's program (the tasks of a problem share it: built once), checked."""
    if variant == "renamed":
        renames, edits, test_edits = rename_edits(text, test, entry_point, seed)
    else:
        renames, edits, test_edits = {}, layout_edits(text), []
    edited = applied(text, edits)
    new_test = applied(test, test_edits)
    new_entry_point = renames.get(entry_point, entry_point)
    _check(variant, (text, test, entry_point), (edited, new_test, new_entry_point), renames)
    renamed = tuple(sorted(renames.items()))
    return _Built(tuple(edits), new_test, new_entry_point, renamed, tokens_changed(text, edited))


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
    return names_defined(text, record["test"], record["entry_point"])


def tokens_changed(original: str, variant: str) -> int:
    """How many tokens (layout tokens aside) differ in text or in the layout before them."""

    def with_layout(text: str) -> list[tuple[str, str]]:
        source = Source(text)
        rows, end = [], 0
        for token in tokens_of(text):
            if token.type in LAYOUT:
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
    before, after = names_defined(*original), names_defined(*edited)
    if after != {renames[name] for name in before} or before & after:
        raise VariantError(f"renaming left {sorted(before & after)} or lost names")


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
