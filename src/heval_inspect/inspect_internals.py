"""The names heval_inspect needs that Inspect does not export, kept here and nowhere else.

Inspect may move or change its private modules in any release; tests/test_inspect_internals.py
fails loudly when either of these stops behaving as relied on here.

- PrerequisiteError: the error `inspect eval` prints as its message alone, without a traceback
  (as for its own missing prerequisites). The package's user errors derive from it (errors.py)
  so that a bad argument or missing file reads as one line saying what to do.
- LocalSandboxEnvironment: the class of Inspect's `local` sandbox, which the scorer must tell
  apart from a container to run its executor directly (sandbox/execution.py).
- EvalRecorder: the writer `inspect eval` writes its .eval logs with, a sample at a time, flushed
  to the file as it goes (batch.py; besides its methods, batch.py reaches its open file, as
  `data[_log_file_key(eval)]`, to move samples into the working copy without copying the whole
  log each time). Inspect's public `write_eval_log` writes a whole EvalLog held in memory, and
  its time grows with the square of the samples (it looks for an earlier copy of each sample
  among all those before it): 16 s for 4,000 samples here, against about 5 ms per sample for
  the programs themselves.
"""

from inspect_ai._util.error import (  # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    PrerequisiteError,
)
from inspect_ai.log._recorders.eval import (  # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    EvalRecorder,
)
from inspect_ai.util._sandbox.local import (  # inspect-evals-lint: ignore[private_api_imports] -- not exported; tested
    LocalSandboxEnvironment,
)

__all__ = ["EvalRecorder", "LocalSandboxEnvironment", "PrerequisiteError"]
