"""From a model's answer to the code that goes into the gap (pure functions, no model, no sandbox).

Chat answers (`middle_from_chat`), in order:

1. CRLF becomes LF; `<think>...</think>` blocks are dropped (and anything before a lone
   `</think>`), with the line breaks that separated them from the answer.
2. The code is the first fenced block tagged `python`, `py`, `python3` or untagged (else the first
   fenced block; an unclosed fence runs to the end; no fence: the whole answer). The line break
   that ends the block's last line before a closing fence on a line of its own is the fence's.
3. The code is reconciled with the code around the gap, which the model may have repeated: a
   repeated tail of the prefix (from the start of a line: the gap's own line, earlier lines, the
   whole program) and a repeated head of the suffix (up to the end of a line) are cut off; for
   HumanEval, a restated function (its `def` line, and a docstring if any) is cut off too.
4. Whitespace is never stripped. Two things an answer cannot show are decided by the program
   prefix + code + suffix: whether the code ends its last line (a fence always does, and chat
   APIs often drop a final line break), and, when the gap starts after indentation, whether the
   answer repeated that indentation. The readings are tried in order and the first whose program
   compiles is used (compile only: nothing runs); if none compiles, the first.

FIM completions (`middle_from_fim`) are used as they are, up to the first stop sequence.
"""

import io
import re
import tokenize
import warnings

THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
THINK_END = "</think>"
# An opening fence at the start of a line, with its language tag (possibly empty).
OPENING_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n", re.MULTILINE)
FENCE = "```"
PYTHON_TAGS = ("python", "py", "python3", "")


def middle_from_chat(answer: str, prefix: str, suffix: str) -> str:
    """The code for the gap between `prefix` and `suffix`, from a chat model's answer."""
    code = code_in_answer(answer.replace("\r\n", "\n"))
    return reconciled(code, prefix, suffix)


def middle_from_fim(completion: str, stop: tuple[str, ...]) -> str:
    """A FIM model's completion up to the first of its family's stop sequences."""
    cut = min((i for i in (completion.find(s) for s in stop) if i >= 0), default=len(completion))
    return completion[:cut]


def code_in_answer(answer: str) -> str:
    """The code a chat answer holds (steps 1 and 2), its last line break left to `reconciled`."""
    thought = THINK_BLOCK.sub("", answer)
    if THINK_END in thought:
        thought = thought[thought.rindex(THINK_END) + len(THINK_END) :]
    if thought != answer:
        answer = thought.lstrip("\n")
    blocks = list(fenced_blocks(answer))
    if not blocks:
        return answer
    tagged = [code for tag, code in blocks if tag in PYTHON_TAGS]
    return (tagged or [blocks[0][1]])[0]


def fenced_blocks(answer: str):
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
    """The code as the gap's middle (steps 3 and 4)."""
    code, whole = _without_repeated_prefix(code, prefix)
    before_suffix = _before_repeated_suffix(code, suffix, whole)
    if before_suffix is not None and whole:
        return before_suffix  # a whole program: the middle is what lies between
    if not suffix:
        code = _without_restated_function(code, prefix)
    readings = _readings(code, prefix, suffix)
    if before_suffix is not None:
        # A repeated line of the suffix starts a line of the answer; a match that starts within
        # a line (`...lower())` ends with the suffix's `)`) is more likely the middle's own code.
        repeated = code[len(before_suffix) :]
        if not before_suffix or before_suffix.endswith("\n") or repeated.startswith("\n"):
            readings.insert(0, before_suffix)
        else:
            readings.append(before_suffix)
    return _first_that_compiles(readings, prefix, suffix)


def _line_starts(text: str) -> list[int]:
    return [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]


def _without_repeated_prefix(code: str, prefix: str) -> tuple[str, bool]:
    """The code after the longest tail of the prefix that starts a line, holds code and opens
    the answer; and whether that tail was the whole prefix (the answer is a whole program).

    Pure indentation is left to _readings: a gap after indentation may begin with more of it.
    An answer that is only the tail but for its final line break (the fence's) leaves nothing.
    """
    for start in _line_starts(prefix):
        tail = prefix[start:]
        if tail.strip() and (code.startswith(tail) or code + "\n" == tail):
            return code[len(tail) :], start == 0
    return code, False


def _before_repeated_suffix(code: str, suffix: str, whole: bool) -> str | None:
    """The code before the longest head of the suffix that ends at a line end and closes the
    answer, or None. The head must hold code, unless the answer is a whole program (then it
    ends with all of the suffix, whatever that is, but for trailing whitespace).
    """
    if not suffix:
        return None
    ends = {len(suffix), len(suffix.rstrip())} | {i for i, c in enumerate(suffix) if c == "\n"}
    for end in sorted(ends, reverse=True):
        head = suffix[:end]
        if (head.strip() or (whole and end >= len(suffix.rstrip()))) and code.endswith(head):
            return code[: len(code) - len(head)]
    return None


def _without_restated_function(code: str, prefix: str) -> str:
    """The body, when a HumanEval answer restates the function (`def` line, maybe a docstring)."""
    signatures = [line for line in prefix.splitlines() if line.lstrip().startswith("def ")]
    if not signatures:
        return code
    signature = signatures[-1].rstrip()
    lines = code.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.rstrip() == signature:
            return _without_docstring("".join(lines[index + 1 :]))
    return code


def _without_docstring(body: str) -> str:
    match = re.match(r'[ \t]*(?:"""|\'\'\')', body)
    if not match:
        return body
    quote = match.group(0).strip()
    end = body.find(quote, match.end())
    if end == -1:
        return body
    line_end = body.find("\n", end)
    return "" if line_end == -1 else body[line_end + 1 :]


def _readings(code: str, prefix: str, suffix: str) -> list[str]:
    """The ways to read the code, most likely first (step 4)."""
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


def _open_at_end(code: str) -> bool:
    """Whether the code stops inside brackets, a string or a continued line."""
    try:
        for _ in tokenize.generate_tokens(io.StringIO(code).readline):
            pass
    except tokenize.TokenError:  # "EOF in multi-line statement / string"
        return True
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
            compile(program, "<program>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True
