"""The names heval_inspect takes from Inspect's private modules (inspect_internals.py) still do
what the package relies on: these fail loudly when an Inspect release moves or changes them.
EvalRecorder is held to it by tests/test_batch.py: the log it writes is the one `inspect eval`
writes, field by field (CI runs it with the lowest Inspect too)."""

import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.util import SandboxEnvironment

from heval_inspect import humaneval, reference
from heval_inspect.errors import DataError, TaskArgumentError
from heval_inspect.inspect_internals import LocalSandboxEnvironment, PrerequisiteError


def test_our_user_errors_are_printed_by_inspects_cli_as_one_message_without_a_traceback(tmp_path):
    assert issubclass(TaskArgumentError, PrerequisiteError)
    assert issubclass(DataError, PrerequisiteError)
    run = subprocess.run(
        [str(Path(sys.executable).with_name("inspect")), "eval", "heval_inspect/humaneval",
         "--model", "none", "-T", "timeout=0", "--log-dir", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = " ".join((run.stdout + run.stderr).split())
    assert run.returncode != 0
    assert "timeout=0: give the seconds each program may run" in output
    assert "Traceback" not in output, output


@pytest.mark.data
def test_the_local_sandbox_is_told_apart_and_runs_the_executor_on_this_machine(tmp_path):
    assert issubclass(LocalSandboxEnvironment, SandboxEnvironment)
    [log] = inspect_eval(
        humaneval(sandbox="local"),
        model="none",
        solver=reference(),
        limit=2,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    assert [s.scores["unit_tests"].metadata["verdict"] for s in log.samples] == ["passed"] * 2
