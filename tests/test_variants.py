"""Semantics-preserving variants (`-T variant=renamed|reformatted`): built right, on edge cases
and on every task, run right in the sandbox, and compared with the original in the report."""

import ast
import asyncio
import io
import itertools
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from heval_inspect import data
from heval_inspect.data import HUMANEVAL, SUBSETS, DataError, load_official, problem_for
from heval_inspect.errors import TaskArgumentError
from heval_inspect.sandbox.execution import execute
from heval_inspect.sandbox.pool_sandbox import standalone_pool
from heval_inspect.schema import Cause
from heval_inspect.scorer import assemble_program
from heval_inspect.tasks import INFILLING_VERSION, humaneval, problem_id
from heval_inspect.variants import (
    GENERATOR_VERSION,
    make_variant,
    problem_names,
    problem_seed,
)


def edge(task_id, prompt, middle, suffix, test, entry_point):
    return {
        "task_id": task_id,
        "prompt": prompt,
        "canonical_solution": middle,
        "suffix": suffix,
        "test": test,
        "entry_point": entry_point,
    }


# Each problem a trap for a renamer that matches text instead of resolving names.
EDGES = {
    "attribute": edge(
        "Edge/attribute",
        'def count_items(items, count):\n    """How many of `items` equal `count`.\n'
        '    >>> count_items([1, 2, 1], 1)\n    2\n    """\n',
        "    return items.count(count)\n",
        "",
        "def check(candidate):\n    assert candidate([1, 2, 1], 1) == 2\n"
        "    assert candidate([], 3) == 0\n",
        "count_items",
    ),
    "f-string": edge(
        "Edge/fstring",
        'def describe(total, unit):\n    """Say how many `unit` there are."""\n',
        "    return f\"{total} {unit}{'s' if total != 1 else ''}\"\n",
        "",
        "def check(candidate):\n    assert candidate(2, 'cat') == '2 cats'\n"
        "    assert candidate(1, 'dog') == '1 dog'\n",
        "describe",
    ),
    "soft keyword": edge(
        "Edge/match",
        "def first_match(pattern, words):\n"
        '    """The first of `words` that starts with `pattern`, else its kind."""\n'
        "    for match in words:\n",
        "        if match.startswith(pattern):\n            return match\n",
        "    match words:\n        case [first, *rest]:\n"
        '            return f"{first} and {len(rest)} more"\n'
        '        case {"name": name, **others}:\n            return name\n'
        "        case _:\n            return None\n",
        "def check(candidate):\n    assert candidate('b', ['ab', 'bc']) == 'bc'\n"
        "    assert candidate('z', ['ab', 'bc']) == 'ab and 1 more'\n"
        "    assert candidate('z', {'name': 'x', 'y': 1}) == 'x'\n",
        "first_match",
    ),
    "builtins shadowed, globals in the tests": edge(
        "Edge/builtins",
        "SCALE = 10\n\n\ndef longest(list, max=None):\n"
        '    """The longest of `list` (at most `max` long, if given), e.g.\n'
        "    >>> longest(['a', 'abc'], max=2)\n    'a'\n    \"\"\"\n"
        '    best = ""\n    for item in list:\n',
        "        if len(item) > len(best) and (max is None or len(item) <= max):\n"
        "            best = item\n",
        "    return best\n\n\ndef helper_total(values):\n"
        "    # the builtins max and list, not longest's parameters\n"
        "    return max(values) * SCALE + len(list(values))\n",
        "def check(candidate):\n    assert candidate(['a', 'abc', 'ab']) == 'abc'\n"
        "    assert candidate(['a', 'abc', 'ab'], max=2) == 'ab'\n"
        "    assert helper_total([1, 2]) == 22\n    assert max([1, SCALE]) == SCALE\n",
        "longest",
    ),
    "scopes": edge(
        "Edge/scopes",
        "def scaled(values, factor=1):\n"
        '    """Each value times `factor`, largest first.\n'
        '    >>> scaled([1, 2], factor=2)\n    [4, 2]\n    """\n'
        "    calls = 0\n\n    def one(value):\n        nonlocal calls\n        calls += 1\n"
        "        return value * factor\n\n",
        "    result = [one(value) for value in values]\n",
        "    return sorted(result, key=lambda item: -item, reverse=False) if calls else result\n",
        "def check(candidate):\n    assert candidate([1, 2], factor=2) == [4, 2]\n"
        "    assert candidate([3]) == [3]\n",
        "scaled",
    ),
    # Prose: only the names of the problem's interface (its function and parameters), only as
    # whole words; a name only the hidden solution defines (`area`) is English there, and so is
    # one only the tests define (`parity`, which they keep).
    "prose": edge(
        "Edge/prose",
        "def part_of(n, s, i):\n"
        '    """Return the area of the triangle of sides n and s, i.e. its n-th part; there\'s\n'
        "    a check: n's parity, n-1, s and i are used.\n"
        '    >>> part_of(1, 2, 3)\n    6\n    """\n',
        "    area = n * s * i\n",
        "    return area\n",
        "def parity(x):\n    return x % 2\n\n\n"
        "def check(candidate):\n    assert parity(candidate(1, 2, 3)) == 0\n",
        "part_of",
    ),
    # Keyword arguments whose function the text does not name: a class's (its __init__), a
    # method's, one reached through functools.partial, one forwarded with **options.
    "untraced keywords": edge(
        "Edge/untraced",
        "import functools\n\n\nclass Box:\n    def __init__(self, value, scale=1):\n"
        "        self.value = value * scale\n\n    def total(self, extra=0):\n"
        "        return self.value + extra\n\n\ndef step_by(start, step):\n"
        "    return start + step\n\n\ndef forward(**options):\n"
        "    return step_by(**options)\n\n\ndef boxed(number, value=0):\n"
        '    """Box `number`, scaled by 2, then step it.\n    >>> boxed(1)\n    6\n    """\n'
        "    box = Box(value=number, scale=2)\n",
        "    bumped = functools.partial(step_by, step=3)(box.total(extra=1))\n",
        "    return forward(start=bumped, step=value) + step_by(number, 0) - number\n",
        "def check(candidate):\n    assert candidate(1) == 6\n"
        "    assert candidate(2, value=1) == 9\n",
        "boxed",
    ),
    # Random-span gaps that cut through a name and through a string.
    "gap in a name": edge(
        "Edge/cut-name",
        'def greet(person_name):\n    """Greet someone."""\n    greeting = "Hel',
        'lo, " + person_na',
        "me\n    return greeting\n",
        "def check(candidate):\n    assert candidate('Ada') == 'Hello, Ada'\n",
        "greet",
    ),
}


def words(text):
    """The identifier-like words of a text, with their offsets."""
    found, start = [], None
    for index, char in enumerate(text + " "):
        inside = char.isalnum() or char == "_"
        if inside and start is None:
            start = index
        elif not inside and start is not None:
            found.append((start, text[start:index]))
            start = None
    return found


def replaced(text, mapping):
    out, at = [], 0
    for start, word in words(text):
        if word in mapping:
            out += [text[at:start], mapping[word]]
            at = start + len(word)
    return "".join(out) + text[at:]


def program_of(record, middle=None):
    middle = record["canonical_solution"] if middle is None else middle
    return assemble_program(
        record["prompt"], middle, record.get("suffix", ""), record["test"], record["entry_point"]
    )


def test_renamed_resolves_names_not_text():
    attribute = make_variant(EDGES["attribute"], "renamed")
    new = attribute.renames
    assert set(new) == {"count_items", "items", "count"}
    # the attribute .count stays; the parameter count is renamed, in the docstring's example too
    assert attribute.record["canonical_solution"] == (
        f"    return {new['items']}.count({new['count']})\n"
    )
    assert f">>> {new['count_items']}([1, 2, 1], 1)" in attribute.record["prompt"]
    assert f"equal `{new['count']}`" in attribute.record["prompt"]
    assert attribute.record["entry_point"] == new["count_items"]

    fstring = make_variant(EDGES["f-string"], "renamed")
    assert fstring.record["canonical_solution"] == (
        f'    return f"{{{fstring.renames["total"]}}} {{{fstring.renames["unit"]}}}'
        f"{{'s' if {fstring.renames['total']} != 1 else ''}}\"\n"
    )

    soft = make_variant(EDGES["soft keyword"], "renamed")
    assert set(soft.renames) == {
        "first_match", "pattern", "words", "match", "first", "rest", "name", "others",
    }  # fmt: skip
    # the soft keyword `match` stays a keyword; the variable `match` is renamed
    assert f"    match {soft.renames['words']}:\n" in soft.record["suffix"]
    assert f"for {soft.renames['match']} in" in soft.record["prompt"]
    assert ".startswith(" in soft.record["canonical_solution"]

    shadow = make_variant(EDGES["builtins shadowed, globals in the tests"], "renamed")
    new = shadow.renames
    assert {"list", "max", "SCALE", "helper_total"} <= set(new)
    assert new["SCALE"].isupper()
    # the builtins max and list, where they are the builtins, stay
    assert "    return max(values" not in shadow.record["suffix"]
    assert f"return max({new['values']}) * {new['SCALE']} + len(list(" in shadow.record["suffix"]
    # the tests: the global and the helper renamed, the builtin not, the keyword argument
    # passed to the entry point renamed with its parameter
    assert f"assert {new['helper_total']}([1, 2]) == 22" in shadow.record["test"]
    assert f"assert max([1, {new['SCALE']}]) == {new['SCALE']}" in shadow.record["test"]
    assert f"candidate(['a', 'abc', 'ab'], {new['max']}=2)" in shadow.record["test"]
    # the comment speaks of the builtins, and is renamed as prose is: by name
    assert f">>> {new['longest']}(['a', 'abc'], {new['max']}=2)" in shadow.record["prompt"]

    # A parameter that a keyword argument may reach through a call the text does not trace to
    # its function keeps its name, wherever it is a parameter: renamed, that call would fail.
    untraced = make_variant(EDGES["untraced keywords"], "renamed")
    new = untraced.renames
    assert set(new) == {"Box", "self", "step_by", "forward", "options", "boxed", "number", "box",
                        "bumped"}  # fmt: skip
    assert f"def __init__({new['self']}, value, scale=1):" in untraced.record["prompt"]
    assert f"def {new['boxed']}({new['number']}, value=0):" in untraced.record["prompt"]
    box = f"{new['box']} = {new['Box']}(value={new['number']}, scale=2)"
    assert box in untraced.record["prompt"]
    assert untraced.record["canonical_solution"] == (
        f"    {new['bumped']} = functools.partial({new['step_by']}, step=3)"
        f"({new['box']}.total(extra=1))\n"
    )
    assert "assert candidate(2, value=1) == 9" in untraced.record["test"]

    scopes = make_variant(EDGES["scopes"], "renamed")
    new = scopes.renames
    assert set(new) == {"scaled", "values", "factor", "calls", "one", "value", "result", "item"}
    assert f"nonlocal {new['calls']}" in scopes.record["prompt"]
    assert f"key=lambda {new['item']}: -{new['item']}" in scopes.record["suffix"]  # sorted's key
    assert f"candidate([1, 2], {new['factor']}=2)" in scopes.record["test"]


def test_prose_renames_only_the_interfaces_names_as_whole_words():
    prose = make_variant(EDGES["prose"], "renamed")
    new = prose.renames
    assert set(new) == {"part_of", "n", "s", "i", "area"}
    assert prose.record["prompt"].splitlines()[1:4] == [
        f'    """Return the area of the triangle of sides {new["n"]} and {new["s"]}, i.e. its n-th '
        "part; there's",
        f"    a check: n's parity, {new['n']}-1, {new['s']} and {new['i']} are used.",
        f"    >>> {new['part_of']}(1, 2, 3)",
    ]
    assert prose.record["canonical_solution"] == (
        f"    {new['area']} = {new['n']} * {new['s']} * {new['i']}\n"
    )
    assert prose.record["test"] == EDGES["prose"]["test"]


@pytest.mark.parametrize("name", list(EDGES))
def test_each_variant_is_the_same_program_with_the_gap_in_place(name):
    original = EDGES[name]
    renamed = make_variant(original, "renamed")
    back = {new: old for old, new in renamed.renames.items()}
    assert not problem_names(renamed.record) & problem_names(original)
    assert problem_names(renamed.record) == set(renamed.renames.values())
    assert renamed.record["prompt"] != original["prompt"]
    whole = "".join(renamed.record[f] for f in ("prompt", "canonical_solution", "suffix"))
    assert replaced(whole, back) == "".join(
        original[f] for f in ("prompt", "canonical_solution", "suffix")
    )
    reformatted = make_variant(original, "reformatted")
    assert reformatted.record["prompt"] != original["prompt"] and reformatted.tokens > 0
    for part in ("prompt", "canonical_solution", "suffix"):
        assert squeezed(reformatted.record[part]) == squeezed(original[part])


def test_a_gap_that_cuts_a_name_or_a_string_still_cuts_it():
    original = EDGES["gap in a name"]
    renamed = make_variant(original, "renamed")
    new = renamed.renames["person_name"]
    middle, suffix = renamed.record["canonical_solution"], renamed.record["suffix"]
    assert renamed.record["prompt"].endswith(f'{renamed.renames["greeting"]} = "Hel')
    assert middle.startswith('lo, " + ') and middle != 'lo, " + '
    cut = middle.removeprefix('lo, " + ')
    assert new.startswith(cut) and suffix.startswith(new[len(cut) :] + "\n") and cut != new
    reformatted = make_variant(original, "reformatted")
    assert reformatted.record["prompt"].endswith("greeting = 'Hel")
    assert reformatted.record["canonical_solution"] == "lo, ' + person_na"


def test_reformatted_lays_out_the_same_tokens_otherwise():
    record = make_variant(EDGES["scopes"], "reformatted").record
    assert record["prompt"].startswith("def scaled( values, factor=1 ):\n    '''Each value")
    assert "    '''\n\n    calls = 0" in record["prompt"]  # a blank line after the docstring
    assert record["canonical_solution"] == "    result = [ one( value ) for value in values ]\n"
    # a bracket of three items, one a line, under the first
    assert record["suffix"] == (
        "    return sorted( result,\n"
        "                   key=lambda item: -item,\n"
        "                   reverse=False ) if calls else result\n"
    )
    # an f-string keeps its layout: its format specs and `=` are part of its value
    fstring = make_variant(EDGES["f-string"], "reformatted").record
    assert fstring["canonical_solution"] == EDGES["f-string"]["canonical_solution"]


def squeezed(text):
    return "".join(char for char in text if not char.isspace()).replace("'", '"')


def test_new_names_are_drawn_per_problem_and_appear_nowhere_in_it():
    for task_id in ("MultiLineInfilling/HumanEval/12/L3_L5", "HumanEval/163", "Edge/scopes"):
        assert problem_seed(task_id) == problem_id(task_id)  # the problem the report clusters by
    first = make_variant(EDGES["scopes"], "renamed")
    assert make_variant(dict(EDGES["scopes"]), "renamed").renames == first.renames
    used = {word for record in EDGES.values() for f in record.values() for _, word in words(f)}
    assert not set(first.renames.values()) & used


def test_an_unknown_variant_is_refused_before_any_file_is_read():
    with pytest.raises(TaskArgumentError, match="variant='renamd': choose from original"):
        humaneval(variant="renamd", data_dir="/nonexistent")


@pytest.mark.data
def test_a_variant_task_names_its_variant_and_keeps_the_sample_ids():
    original, renamed = humaneval(), humaneval(variant="renamed")
    assert [s.id for s in renamed.dataset] == [s.id for s in original.dataset]
    assert renamed.version == original.version
    assert renamed.metadata["variant"] == "renamed"
    assert renamed.metadata["variant_version"] == GENERATOR_VERSION
    sample = renamed.dataset[0]
    assert sample.metadata["variant"] == "renamed"
    assert sample.metadata["source"].endswith(f"#renamed-{GENERATOR_VERSION}")
    # the original's logs are as before: no variant anywhere
    assert "variant" not in original.metadata
    assert set(original.dataset[0].metadata) == {"subset", "problem_id", "source"}
    assert "has_close_elements" in original.dataset[0].input
    assert "has_close_elements" not in sample.input


@pytest.mark.data
def test_a_process_that_did_not_build_the_variant_builds_it_again(monkeypatch):
    """`inspect score` re-scoring a variant's log: its samples name the variant."""
    source = humaneval(variant="renamed").dataset[0].metadata["source"]
    monkeypatch.setattr(data, "_REMEMBERED", {})
    record = problem_for("HumanEval/0", {"source": source})
    assert record["entry_point"] != "has_close_elements"
    assert record == {"suffix": "", **make_variant(load_official(HUMANEVAL)[0], "renamed").record}
    with pytest.raises(DataError, match="re-score them with the heval_inspect version"):
        problem_for(
            "HumanEval/0", {"source": source.replace(f"renamed-{GENERATOR_VERSION}", "renamed-0")}
        )


def official_files():
    return {"humaneval": HUMANEVAL, **SUBSETS}


LARGE = {"single_line", "multi_line", "random_span"}


@pytest.mark.data
@pytest.mark.parametrize(
    "subset",
    [pytest.param(s, marks=[pytest.mark.slow] if s in LARGE else []) for s in official_files()],
)
def test_every_task_has_both_variants_with_the_gap_on_the_same_code(subset):
    records = load_official(official_files()[subset])
    renames_of_problem = {}
    for original in records:
        parts = {f: original.get(f, "") for f in ("prompt", "canonical_solution", "suffix")}
        renamed = make_variant(original, "renamed")
        # every name the problem defines is gone, and the same names for all its tasks
        assert not problem_names(renamed.record) & problem_names(original), original["task_id"]
        problem = problem_seed(original["task_id"])
        assert renames_of_problem.setdefault(problem, renamed.renames) == renamed.renames
        back = {new: old for old, new in renamed.renames.items()}
        assert renamed.record["prompt"] != original["prompt"]
        # a gap with text keeps some (inside a name, a letter of its new name): an empty gap
        # would make nothing the right answer
        has_code = bool(original["canonical_solution"])
        assert bool(renamed.record["canonical_solution"]) == has_code, original["task_id"]
        for part, text in parts.items():
            variant = renamed.record.get(part, "")
            if replaced(variant, back) != text:  # only where the gap cuts through a name
                assert cuts_a_name(original, part), (original["task_id"], part)
        reformatted = make_variant(original, "reformatted").record
        assert reformatted["prompt"] != original["prompt"]
        assert bool(reformatted["canonical_solution"]) == has_code, original["task_id"]
        for part, text in parts.items():
            variant = reformatted.get(part, "")
            assert squeezed(variant) == squeezed(text), (original["task_id"], part)
            assert variant.endswith("\n") == text.endswith("\n")


@pytest.mark.data
@pytest.mark.parametrize(
    "subset",
    [pytest.param(s, marks=[pytest.mark.slow] if s in LARGE else []) for s in official_files()],
)
def test_prose_changes_only_the_interfaces_names_as_whole_words(subset):
    """Every word of a docstring's or comment's prose (doctest lines aside) that a variant of a
    task changes is a name the HumanEval prompt of its problem defines at its top level (a
    function, a parameter, a class, a module-level name), standing as a word of its own."""
    interfaces = {r["task_id"]: top_level_names(r["prompt"]) for r in load_official(HUMANEVAL)}
    changed, wrong = 0, []
    for original in load_official(official_files()[subset]):
        interface = interfaces[problem_seed(original["task_id"])]
        text = "".join(original.get(f, "") for f in ("prompt", "canonical_solution", "suffix"))
        for variant in ("renamed", "reformatted"):
            record = make_variant(original, variant).record
            new = "".join(record.get(f, "") for f in ("prompt", "canonical_solution", "suffix"))
            old_words, new_words = prose_words(text), prose_words(new)
            assert len(old_words) == len(new_words), (original["task_id"], variant)
            for (offset, word), (_, renamed) in zip(old_words, new_words, strict=True):
                if word == renamed:
                    continue
                changed += 1
                why = (
                    "not the interface's"
                    if word not in interface
                    else part_of_a_word(text, offset, word)
                )
                if why:
                    wrong.append((original["task_id"], variant, word, renamed, why))
    assert changed > 0
    assert not wrong, f"{len(wrong)} of {changed} prose words changed wrongly: {wrong[:20]}"


def top_level_names(prompt):
    """The names a HumanEval prompt defines at its top level."""
    names = set()
    for node in ast.parse(prompt).body:
        if isinstance(node, ast.FunctionDef):
            arguments = node.args
            every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
            names |= {node.name, *(a.arg for a in every)}
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
        else:
            names |= {
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
    return names


def prose_words(text):
    """(offset, word) of each word of the program's docstrings and comments, in order, but
    those of doctest lines (`>>>`, `...`)."""
    lines = text.splitlines(keepends=True)
    starts = list(itertools.accumulate((len(line) for line in lines), initial=0))

    def offset(line, byte_column):
        return starts[line - 1] + len(lines[line - 1].encode()[:byte_column].decode())

    spans = []
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if not (isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef) and body):
            continue
        first = body[0]
        value = first.value if isinstance(first, ast.Expr) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            spans.append(
                (offset(first.lineno, first.col_offset),
                 offset(first.end_lineno, first.end_col_offset))
            )  # fmt: skip
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            start = starts[token.start[0] - 1] + token.start[1]
            spans.append((start, start + len(token.string)))
    words = []
    for start, end in sorted(spans):
        for found in re.finditer(r"\w+", text[start:end]):
            at = start + found.start()
            line = text[text.rfind("\n", 0, at) + 1 : at].lstrip()
            if not line.startswith((">>>", "...")):
                words.append((at, found.group()))
    return words


def part_of_a_word(text, offset, word):
    """What longer word of prose text[offset:] + word is part of, if any."""
    start, end = offset, offset + len(word)
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    before, after = text[start:offset], text[offset + len(word) : end]
    if re.search(r"[^\W\d_]['’]$", before) or re.match(r"['’][^\W\d_]", after):
        return "a contraction or possessive"
    if re.search(r"\w-$", before) or re.match(r"-[^\W\d_]", after):
        return "a hyphenated word"
    if re.match(r"\.[^\W\d_]{1,3}\.", after) or before.endswith("."):
        return "an abbreviation or a dotted name"
    return None


def cuts_a_name(record, part):
    """Whether the gap starts or ends inside a word (a renamed name cut in two)."""
    prompt, middle = record["prompt"], record["canonical_solution"]
    whole = prompt + middle + record.get("suffix", "")

    def inside(offset):
        return 0 < offset < len(whole) and all(
            c.isalnum() or c == "_" for c in whole[offset - 1 : offset + 1]
        )

    return inside(len(prompt)) or inside(len(prompt) + len(middle))


async def verdicts(programs, timeout=3.0):
    pool = (await standalone_pool()).pool
    limit = asyncio.Semaphore(pool.capacity)

    async def one(program):
        async with limit:
            return (await execute(program, timeout)).cause

    return await asyncio.gather(*(one(program) for program in programs))


@pytest.mark.docker
def test_edge_cases_pass_as_variants_and_their_wrong_answers_fail():
    programs, expected = [], []
    for name, original in EDGES.items():
        for variant in ("original", "renamed", "reformatted"):
            record = make_variant(original, variant).record
            programs.append(program_of(record))
            expected.append((name, variant, "canonical", Cause.PASSED))
            programs.append(program_of(record, middle=""))
            expected.append((name, variant, "empty", "failed"))
    causes = asyncio.run(verdicts(programs))
    got = [
        (name, variant, middle, cause if cause == Cause.PASSED else "failed")
        for (name, variant, middle, _), cause in zip(expected, causes, strict=True)
    ]
    assert got == expected


# --- The whole dataset in the sandbox: benchmarks/variant_sweep.py (docs/variants.md's numbers)


@pytest.mark.docker
def test_the_sweep_scores_every_variant_of_a_file_as_a_user_would():
    """The sweep's one file here (all five files are about 106,000 programs): every variant's
    canonical gap passes, and the wrong gaps fail as in the original."""
    sweep = Path(__file__).parents[1] / "benchmarks" / "variant_sweep.py"
    done = subprocess.run(
        [sys.executable, str(sweep), "--files", "random_span_light"],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    print(done.stdout[-3000:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [row["variant"] for row in rows] == ["original", "renamed", "reformatted"]
    for row in rows:
        assert row["canonical passed"] == row["tasks"] == 164, row
        assert row["empty passed"] == row["pass passed"] == 0, row
    assert rows[1]["identifiers"] > 0 and rows[2]["tokens"] > 0


# --- The report: a model that answers from memory --------------------------------------------


@pytest.mark.docker
def test_the_report_shows_the_gap_of_a_model_that_answers_from_memory(tmp_path):
    """A "model" that answers every task with the original's canonical gap, in the original and
    in the renamed variant (what memorisation does): same name, same task, same problems and
    completion file; the report names the comparison and shows the gap it must."""
    from heval_inspect.report import build_report
    from heval_inspect.report.render import markdown
    from heval_inspect.score import score_completions

    task = "humaneval_random_span_infilling_light"
    records = load_official(SUBSETS["random_span_light"])
    logs = tmp_path / "logs"
    # and the same "model" on HumanEval: a gap of its own, under a title of its own
    for name, rows in ((task, records), ("humaneval", load_official(HUMANEVAL))):
        answers = tmp_path / f"{name}.jsonl"
        answers.write_text(
            "".join(
                json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"]}) + "\n"
                for r in rows
            )
        )
        for variant in ("original", "renamed"):
            score_completions(str(answers), name, {"variant": variant}, str(logs),
                              metadata={"label": "memoriser"}, progress=False)  # fmt: skip
    # what the renamed run must find: the tasks whose original gap fails in the variant
    renamed = [make_variant(r, "renamed").record for r in records]
    causes = asyncio.run(
        verdicts(
            [program_of(v, r["canonical_solution"]) for r, v in zip(records, renamed, strict=True)]
        )
    )
    failing = sorted(
        r["task_id"] for r, c in zip(records, causes, strict=True) if c != Cause.PASSED
    )
    assert 0 < len(failing) < len(records)

    report = build_report([str(logs)])
    gaps = {c.other.task: c for c in report.comparisons}
    assert len(report.comparisons) == 2 and all(c.variant_gap for c in report.comparisons)
    comparison, humaneval_gap = gaps[task], gaps["humaneval"]
    assert humaneval_gap.differences[0].difference == -1.0  # no original body runs renamed
    assert comparison.baseline.variant.name == "original"
    assert comparison.other.variant.name == "renamed"
    title = f"memoriser ({task} {INFILLING_VERSION}): renamed minus original (variant gap)"
    assert comparison.title == title
    by_figure = {d.figure: d for d in comparison.differences}
    gap = by_figure["pass@1"]
    assert gap.group == "random_span_light" and gap.tasks == len(records)
    assert gap.baseline_value == 1.0
    assert gap.difference == pytest.approx(-len(failing) / len(records))
    assert gap.high < 0 and gap.p_value < 0.001
    # exact match is against the variant's own gap: the original's text no longer matches it
    changed = sum(
        r["canonical_solution"] != v["canonical_solution"]
        for r, v in zip(records, renamed, strict=True)
    )
    assert by_figure["exact_match"].difference == pytest.approx(-changed / len(records))
    assert by_figure["exact_match"].high < 0
    assert comparison.flips["pass@1"] == (failing, [])  # lost, gained
    page = markdown(report)
    assert f"### {title}\n" in page and f"### {title}: tasks that flip (pass@1)\n" in page
    assert f"### {humaneval_gap.title}\n" in page and humaneval_gap.title != title
    assert "| exact_match |" in page
    assert failing[0] in page


# --- docs/variants.md shows what the generator makes ----------------------------------------

VARIANTS_PAGE = Path(__file__).parents[1] / "docs" / "variants.md"
GAP_START, GAP_END = "⟦", "⟧"


def example_block(record, variant):
    """A task as docs/variants.md shows it: prompt, ⟦gap⟧, suffix, under a heading."""
    shown = make_variant(record, variant).record
    text = (
        shown["prompt"]
        + GAP_START
        + shown["canonical_solution"]
        + GAP_END
        + shown.get("suffix", "")
    )
    return f"`{variant}`:\n\n```python\n{text.rstrip()}\n```\n"


@pytest.mark.data
def test_the_variants_page_shows_the_generators_own_examples():
    page = VARIANTS_PAGE.read_text(encoding="utf-8")
    records = {r["task_id"]: r for f in official_files().values() for r in load_official(f)}
    shown = [line.removeprefix("#### ") for line in page.splitlines() if line.startswith("#### ")]
    assert len(shown) == 3 * len(official_files())
    for task_id in shown:
        for variant in ("original", "renamed", "reformatted"):
            assert example_block(records[task_id], variant) in page, (task_id, variant)
