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
(scopes.py), never from matching text. The gap is then cut again where it was: each edit of the
text moves the gap's two ends by what it adds or removes before them, so the gap holds the same
lines, or the same span, of the canonical solution (gap.py).

New names are drawn per HumanEval problem (seeded by its id and GENERATOR_VERSION), not per
task: every task of a problem shows the same renamed program, so a model that sees several of
them sees one consistent problem, and a renamed run can be read per problem as the original is.
They are words of NEUTRAL_WORDS that appear nowhere in the original problem (its texts and
tests), so a new name can meet no name the program already uses.

The modules, each using only those above it: versions (the variants and the generator's
version), text (offsets, tokens, edits), gap, scopes, renamed, reformatted, build.
"""

from .build import make_variant, problem_names, problem_seed, variant_records
from .renamed import ENGLISH_ONE_LETTER_WORDS, NEUTRAL_WORDS
from .versions import GENERATOR_VERSION, VARIANTS, Variant, VariantError, check_variant

__all__ = [
    "ENGLISH_ONE_LETTER_WORDS",
    "GENERATOR_VERSION",
    "NEUTRAL_WORDS",
    "VARIANTS",
    "Variant",
    "VariantError",
    "check_variant",
    "make_variant",
    "problem_names",
    "problem_seed",
    "variant_records",
]
