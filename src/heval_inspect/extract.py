"""From a model's answer to the code that goes into the gap.

What comes out is inserted into the program as it is: nothing is stripped from the code itself.
"""

import re

# An opening fence with an optional language tag, its content, and the closing fence.
FENCED_BLOCK = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)


def middle_from_chat(answer: str) -> str:
    """The content of the first fenced code block, else the answer itself."""
    block = FENCED_BLOCK.search(answer)
    return block.group(1) if block else answer
