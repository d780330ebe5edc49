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

The steps' modules, each using only those above it: code (tokens, syntax trees, names, the
compile check), reconcile (steps 4 and 5), restated (step 3), blocks (steps 1 and 2).
"""

from .blocks import code_and_other_blocks, with_definitions_of_other_blocks
from .reconcile import reconciled
from .restated import restated_function


def middle_from_chat(answer: str, prefix: str, suffix: str) -> str:
    """The code for the gap between `prefix` and `suffix`, from a chat model's answer."""
    code, others = code_and_other_blocks(answer.replace("\r\n", "\n"), prefix)
    restated = restated_function(code, prefix, suffix)
    middle = reconciled(code, prefix, suffix) if restated is None else restated
    return with_definitions_of_other_blocks(middle, others, prefix, suffix)


def middle_from_fim(completion: str, stop: tuple[str, ...]) -> str:
    """A FIM model's completion up to the first of its family's stop sequences."""
    cut = min((i for i in (completion.find(s) for s in stop) if i >= 0), default=len(completion))
    return completion[:cut]
