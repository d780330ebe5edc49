"""What the model is asked. One place, so chat styles and fill-in-the-middle formats can grow here."""

GAP = "<FILL_ME>"

INFILL_INSTRUCTION = """\
Below is a Python program with a gap marked {gap}. Write the code that belongs in the gap, so that \
the program is complete and correct.

```python
{prefix}{gap}{suffix}
```

Reply with only the missing code, in one ```python fenced block, exactly as it should be inserted \
in place of {gap} (keep its indentation; do not repeat the code before or after the gap)."""

COMPLETE_INSTRUCTION = """\
Complete the following Python function.

```python
{prefix}
```

Reply with only the code that continues it (the function body), in one ```python fenced block, \
indented as it should appear after the code above."""


def chat_prompt(prefix: str, suffix: str) -> str:
    """The user message for a chat model: the code around the gap and what to return."""
    if suffix:
        return INFILL_INSTRUCTION.format(prefix=prefix, suffix=suffix, gap=GAP)
    return COMPLETE_INSTRUCTION.format(prefix=prefix)
