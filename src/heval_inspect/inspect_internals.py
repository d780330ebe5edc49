"""The names heval_inspect needs that Inspect does not export, kept here and nowhere else.

Inspect may move or change its private modules in any release; tests/test_inspect_internals.py
fails loudly when either of these stops behaving as relied on here.

- PrerequisiteError: the error `inspect eval` prints as its message alone, without a traceback
  (as for its own missing prerequisites). The package's user errors derive from it (errors.py)
  so that a bad argument or missing file reads as one line saying what to do.
- Chain: the class of a solver made of steps (`chain(...)`). Inspect makes a task's plan by
  iterating it when no --solver replaces the task's own, before any sample runs and outside its
  sample error handling: the tasks' default solvers, which ask a model, are one, so that a run
  with no model (`--model none`) stops there with one line (solvers.py).
- LocalSandboxEnvironment: the class of Inspect's `local` sandbox, which the scorer must tell
  apart from a container to run its executor directly (sandbox/execution.py).
- EvalRecorder: the writer `inspect eval` writes its .eval logs with, a sample at a time, flushed
  to the file as it goes (score.py; besides its methods, score.py reaches its open file, through
  `open_log_file`, to move samples into the working copy without copying the whole log each
  time). Inspect's public `write_eval_log` writes a whole EvalLog held in memory, and
  its time grows with the square of the samples (it looks for an earlier copy of each sample
  among all those before it): 16 s for 4,000 samples here, against about 5 ms per sample for
  the programs themselves.
- `log_compression_in_one_thread`: Inspect's writer compresses each sample of a .eval log with a
  zstd compressor of 12 threads (`inspect_ai._util.zipfile._ZSTD_THREADS`), made anew for each
  entry: for a sample of a few KB, starting those threads costs about 0.8 ms of CPU, against
  0.04 ms in one thread (docs/benchmarks.md). The log reads the same either way (a zstd frame is
  a zstd frame).
- MODEL_INFO_LOOKUP_API_KEY: the placeholder key Inspect builds a provider with only to look up
  the model's information (its name canonicalised); Inspect says providers must not send it. A
  provider built with it sends nothing (fim_endpoints.py). Older Inspect has no such lookup.
- `_repr_params_`: what Inspect records in a log of a solver's or a metric's argument that is
  not a plain value: the value of its `_repr_params_()`, a method Inspect looks for by name. The
  tasks hand the FIM solver and the metric the arguments they parsed, a prompts.FimFormat and
  a metrics.PassAtK, which record themselves as the user gave them (the family's name, `k` as
  given), so that a log's plan and metrics read as if the names had been passed, and a solver
  or metric Inspect makes again from a log (eval-retry, `inspect score`) parses them from there.
"""

from inspect_ai._util import (
    # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    zipfile as inspect_zipfile,
)
from inspect_ai._util.error import (
    # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    PrerequisiteError,
)
from inspect_ai.log import EvalSpec
from inspect_ai.log._recorders.eval import (
    # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    EvalRecorder,
    ZipLogFile,
)
from inspect_ai.solver._chain import (
    # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    Chain,
)
from inspect_ai.util._sandbox.local import (
    # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    LocalSandboxEnvironment,
)

try:
    from inspect_ai.model._model_info import (
        # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
        MODEL_INFO_LOOKUP_API_KEY,
    )
except ImportError:  # an Inspect that builds no provider for a lookup
    MODEL_INFO_LOOKUP_API_KEY = "__model_info_lookup__"


def log_compression_in_one_thread() -> None:
    """Have this process's .eval writer compress each log entry in the calling thread: for the
    many small entries of `heval-inspect score` (one per sample), a compressor's threads cost
    more than they save. For this process only: `inspect eval` is left as Inspect makes it. An
    Inspect without that setting is left as it is: the log is the same, only slower to write
    (and tests/test_inspect_internals.py fails, to say so)."""
    if hasattr(inspect_zipfile, "_ZSTD_THREADS"):
        inspect_zipfile._ZSTD_THREADS = 0


def open_log_file(recorder: EvalRecorder, eval: EvalSpec) -> ZipLogFile:
    """The recorder's open file of the log of `eval` (after its `log_init`): the working copy
    that `write_buffered_samples` moves the samples given so far into, without writing the
    whole log to its file as `flush` does."""
    return recorder.data[recorder._log_file_key(eval)]


__all__ = [
    "Chain",
    "EvalRecorder",
    "LocalSandboxEnvironment",
    "MODEL_INFO_LOOKUP_API_KEY",
    "PrerequisiteError",
    "log_compression_in_one_thread",
    "open_log_file",
]
