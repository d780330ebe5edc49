"""What the model is asked: a chat prompt in words, or a raw fill-in-the-middle (FIM) prompt.

Chat models see the code around the gap and are asked for the missing code (extract/ turns
their answer back into the gap's code). Base code models get the prompt they were trained on:
the prefix and the suffix between their own special tokens, one row of `FIM_FORMATS` per family.
"""

from dataclasses import dataclass
from typing import Any, Literal

from .errors import TaskArgumentError, did_you_mean

GAP = "<FILL_ME>"

INFILL_INSTRUCTION = """\
Below is a Python program with a gap marked {gap}. Write the code that belongs in the gap, so that \
the program is complete and correct.

```python
{prefix}{gap}{suffix}
```

Reply with only the missing code, in one ```python fenced block, exactly as it should be inserted \
in place of {gap} (keep its indentation; do not repeat the code before or after the gap). The gap \
may start or end in the middle of a line, and it may be empty (then reply with an empty block)."""

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


@dataclass(frozen=True)
class FimFormat:
    """One model family's fill-in-the-middle prompt, as its authors document it.

    `layout` is the prompt with `{prefix}` and `{suffix}` where the code goes. A template rather
    than three token fields because the families differ in more than their tokens: suffix-first
    (SPM) orders are not one order (Code Llama keeps `<PRE>` first, Codestral has no middle
    token), Code Llama's spaces belong to its tokens, and InCoder ends with two sentinels.
    """

    name: str  # the `fim_format` task argument
    layout: str
    stop: tuple[str, ...]  # end of the middle: sent as stop sequences, and cut at by extract/
    source: str  # where the layout and stop tokens are documented

    @property
    def order(self) -> Literal["PSM", "SPM"]:
        """Prefix-suffix-middle, or suffix-prefix-middle (the suffix is shown first)."""
        return "PSM" if self.layout.index("{prefix}") < self.layout.index("{suffix}") else "SPM"

    def _repr_params_(self) -> str:
        """What Inspect records of an argument of this type (infill_fim's `fim_format`): the
        family's name, as `-S fim_format=NAME` gives it (see inspect_internals.py)."""
        return self.name


# The prompts are text: the server's tokenizer must map the token strings to the special tokens
# (Hugging Face tokenizers do; a Codestral served with vLLM's `mistral` tokenizer mode does not),
# and it adds the beginning-of-sequence token itself, so no BOS is written here.
FIM_FORMATS: dict[str, FimFormat] = {
    row.name: row
    for row in [
        FimFormat(
            "starcoder",
            "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>",
            ("<|endoftext|>", "<file_sep>"),
            # <file_sep> ends a file in StarCoder2's repository-level training data.
            "bigcode-evaluation-harness bigcode_eval/tasks/santacoder_fim.py (FIM_PREFIX, ...); "
            "StarCoder 2 paper, arXiv:2402.19173 section 5 (<file_sep> between files)",
        ),
        FimFormat(
            "santacoder",
            "<fim-prefix>{prefix}<fim-suffix>{suffix}<fim-middle>",
            ("<|endoftext|>",),
            "bigcode/santacoder model card (huggingface.co): <fim-prefix>, <fim-suffix>, "
            "<fim-middle>, not the underscored StarCoder tokens; TGI's santacoder.py (EOD)",
        ),
        FimFormat(
            "codellama",
            "<PRE> {prefix} <SUF>{suffix} <MID>",
            ("<EOT>", "</s>"),
            "meta-llama/codellama llama/generation.py, infilling_prompt_tokens: "
            '"<PRE> {pre} <SUF>{suf} <MID>"; the infill ends with <EOT>',
        ),
        FimFormat(
            "codellama_spm",
            "<PRE> <SUF>{suffix} <MID> {prefix}",
            ("<EOT>", "</s>"),
            "meta-llama/codellama llama/generation.py, infilling_prompt_tokens(suffix_first=True): "
            '"<PRE> <SUF>{suf} <MID> {pre}"',
        ),
        FimFormat(
            "deepseek",
            "<｜fim▁begin｜>{prefix}<｜fim▁hole｜>{suffix}<｜fim▁end｜>",
            ("<｜end▁of▁sentence｜>", "<|EOT|>"),
            # Full-width bars and U+2581 (the SentencePiece space), not ASCII | and _.
            "deepseek-ai/DeepSeek-Coder README.md, Code Insertion; tokenizer_config.json of "
            "deepseek-coder-6.7b-base (eos_token)",
        ),
        FimFormat(
            "qwen2.5-coder",
            "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
            (
                "<|endoftext|>",
                "<|fim_prefix|>",
                "<|fim_middle|>",
                "<|fim_suffix|>",
                "<|fim_pad|>",
                "<|repo_name|>",
                "<|file_sep|>",
                "<|im_end|>",
            ),
            "QwenLM/Qwen2.5-Coder README.md (file-level code completion) and "
            "examples/Qwen2.5-Coder-fim.py (eos_token_ids 151643-151664)",
        ),
        FimFormat(
            "codegemma",
            "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
            ("<|file_separator|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<eos>"),
            "ai.google.dev/gemma/docs/codegemma/prompt-structure and the google/codegemma-7b "
            "model card (terminators: FIM tokens and <|file_separator|>)",
        ),
        FimFormat(
            "codestral",
            "[SUFFIX]{suffix}[PREFIX]{prefix}",
            ("</s>", "[PREFIX]", "[SUFFIX]", "[MIDDLE]"),
            # The cookbook's space before the prefix is SentencePiece's leading space, which the
            # server's tokenizer adds itself when it encodes the prefix.
            "mistralai/mistral-common tokens/tokenizers (InstructTokenizerV2.encode_fim: "
            "[SUFFIX] suffix [PREFIX] prefix); mistralai/cookbook "
            "concept-deep-dive/tokenization/chat_templates.md "
            "(FIM: <s>[SUFFIX]suffix[PREFIX] prefix)",
        ),
        FimFormat(
            "incoder",
            "{prefix}<|mask:0|>{suffix}<|mask:1|><|mask:0|>",
            ("<|endofmask|>", "<|endoftext|>"),
            # No spaces inside the sentinels: make_sentinel(i) is f"<|mask:{i}|>".
            "dpfried/incoder example_usage.py (make_sentinel, EOM, infill with extra_sentinel)",
        ),
    ]
}


def fim_format(name: Any) -> FimFormat:
    """The FIM family a `fim_format` argument names (the tasks' `-T`, infill_fim's `-S`): the
    one parser of it, with a clear error listing the families otherwise."""
    if not isinstance(name, str):
        raise TaskArgumentError(f"fim_format={name!r}: give one of {', '.join(FIM_FORMATS)}.")
    if name not in FIM_FORMATS:
        raise TaskArgumentError(
            f"Unknown fim_format {name!r}{did_you_mean(name, FIM_FORMATS)}: choose one of "
            f"{', '.join(FIM_FORMATS)} "
            f"(e.g. -T fim_format=starcoder), or leave it unset to prompt a chat model."
        )
    return FIM_FORMATS[name]


def fim_prompt(family: FimFormat, prefix: str, suffix: str) -> str:
    """The raw prompt for a FIM model: prefix and suffix placed in the family's layout."""
    # str.format reads braces in the layout only, never in the code it inserts.
    return family.layout.format(prefix=prefix, suffix=suffix)
