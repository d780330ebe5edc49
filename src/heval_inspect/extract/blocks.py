"""Steps 1 and 2: a chat answer's code, out of its thinking and its fenced blocks; and the
definitions that other blocks of the answer give the program.
"""

import ast
from collections.abc import Iterator

from .code import (
    BUILTINS,
    FENCE,
    OPENING_FENCE,
    PYTHON_TAGS,
    THINK_BLOCK,
    THINK_END,
    bound_by,
    function_holding_the_gap,
    functions_defined,
    names_in,
    statement_text,
    syntax_tree,
)
from .restated import with_definitions


def code_and_other_blocks(answer: str, prefix: str) -> tuple[str, list[str]]:
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
    function = function_holding_the_gap(prefix)
    chosen = 0
    if function is not None and len(tagged) > 1:
        defining = [i for i, code in enumerate(tagged) if function in functions_defined(code)]
        prompts = functions_defined(prefix)
        others = (i for i, code in enumerate(tagged) if functions_defined(code) <= prompts)
        chosen = defining[-1] if defining else next(others, 0)
    return tagged[chosen], tagged[:chosen] + tagged[chosen + 1 :]


def with_definitions_of_other_blocks(
    middle: str, others: list[str], prefix: str, suffix: str
) -> str:
    """The middle with the definitions, from the answer's other blocks, of the names its program
    reads and nothing in it binds (a helper or an import the answer wrote in a block of its own;
    of two, the later), where they compile (as `with_definitions` places them)."""
    module = syntax_tree(prefix + middle + suffix) if others else None
    if module is None:
        return middle
    bound = {name for node in module.body for name in bound_by(node)} | BUILTINS
    definitions: dict[str, tuple[int, int, ast.stmt, str]] = {}
    for block, code in enumerate(others):
        for position, node in enumerate(parsed.body if (parsed := syntax_tree(code)) else []):
            for name in bound_by(node) - bound:
                definitions[name] = (block, position, node, code)
    missing, chosen = names_in(module) - bound, set()
    while missing & set(definitions):
        found = {definitions[name][:2]: definitions[name] for name in missing & set(definitions)}
        chosen |= set(found.values())
        read = set().union(*(names_in(node) for _, _, node, _ in found.values()))
        bound |= set().union(*(bound_by(node) for _, _, node, _ in found.values()))
        missing = read - bound
    if not chosen:
        return middle
    texts = [statement_text(code, node) for _, _, node, code in sorted(chosen, key=lambda d: d[:2])]
    return with_definitions(middle, "\n\n".join(texts) + "\n", prefix, suffix)


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
