"""The names heval_inspect takes from Inspect's private modules (inspect_internals.py) still do
what the package relies on: these fail loudly when an Inspect release moves or changes them.
EvalRecorder is held to it by tests/test_score.py: the log it writes is the one `inspect eval`
writes, field by field (CI runs it with the lowest Inspect too)."""

import asyncio
import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import match
from inspect_ai.util import SandboxEnvironment

from heval_inspect import humaneval, humaneval_single_line_infilling, reference
from heval_inspect.data import SUBSETS, load_official
from heval_inspect.errors import DataError, TaskArgumentError
from heval_inspect.inspect_internals import (
    MODEL_INFO_LOOKUP_API_KEY,
    EvalRecorder,
    LocalSandboxEnvironment,
    PrerequisiteError,
    inspect_zipfile,
    log_compression_in_one_thread,
    open_log_file,
)
from heval_inspect.testing.perfect_model import PerfectModelServer


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


def test_log_entries_are_compressed_in_the_writing_thread_once_asked(monkeypatch):
    # Inspect's own setting, as its module sets it (an earlier `heval-inspect score` in this
    # process may have changed it), restored after the test: the setting is the process's.
    source = Path(inspect_zipfile.__file__).read_text(encoding="utf-8")
    default = re.search(r"^_ZSTD_THREADS\b[^=\n]*=\s*(\d+)\s*$", source, re.MULTILINE)
    threads = int(default.group(1)) if default else inspect_zipfile._ZSTD_THREADS
    monkeypatch.setattr(inspect_zipfile, "_ZSTD_THREADS", threads)

    def threads_started_while_an_entry_is_written() -> set[str]:
        # Threads this process had before are left out (another test's may end meanwhile).
        before = set(os.listdir("/proc/self/task"))
        with (
            zipfile.ZipFile(io.BytesIO(), "w", **inspect_zipfile.zipfile_compress_kwargs) as log,
            log.open("sample.json", "w") as entry,
        ):
            entry.write(b'{"a": 1}' * 1000)
            return set(os.listdir("/proc/self/task")) - before

    assert threads_started_while_an_entry_is_written()  # Inspect's default: a pool per entry
    log_compression_in_one_thread()
    assert not threads_started_while_an_entry_is_written()


def test_a_recorders_open_log_file_takes_the_samples_given_so_far(tmp_path):
    [header] = inspect_eval(
        Task(dataset=[Sample(input="2 + 2", target="4")], scorer=match()),
        model="none", limit=0, log_dir=str(tmp_path / "header"), display="none",
    )  # fmt: skip
    recorder = EvalRecorder(str(tmp_path))

    async def write() -> None:
        await recorder.log_init(header.eval, str(tmp_path / "log.eval"), clean=True)
        await recorder.log_start(header.eval, header.plan)
        file = open_log_file(recorder, header.eval)
        await file.write_buffered_samples()  # what score.py's writer calls on it

    asyncio.run(write())


@pytest.mark.data
def test_the_parsed_k_and_fim_format_are_recorded_in_the_log_as_given(tmp_path, monkeypatch):
    # The task hands the FIM solver and the metric the values it parsed (a FimFormat, a PassAtK):
    # Inspect records each by its `_repr_params_`, as if the names had been passed.
    task = humaneval_single_line_infilling(fim_format="starcoder", k=["1", "2"], sandbox="local")
    task.dataset = task.dataset[:1]
    with PerfectModelServer([load_official(SUBSETS["single_line"])[0]]) as server:
        monkeypatch.setenv("PERFECT_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("PERFECT_API_KEY", "perfect")
        model = get_model("openai-api-completions/perfect/starcoder", memoize=False)
        [log] = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    [step] = log.plan.steps
    assert (step.solver, step.params) == ("heval_inspect/infill_fim", {"fim_format": "starcoder"})
    [metric] = log.eval.metrics
    assert (metric.name, metric.options["k"]) == ("heval_inspect/humaneval_metrics", ["1", "2"])
    assert log.results.scores[0].metrics["pass@2"].value == 1.0


def test_the_lookup_placeholder_is_the_key_inspect_builds_a_provider_with_to_look_it_up():
    # Inspect's model lookup makes a provider with this key (get_model(..., api_key=...)); a
    # provider of ours built with it sends nothing (test_fim_endpoints.py).
    _model_info = pytest.importorskip("inspect_ai.model._model_info")
    if not hasattr(_model_info, "MODEL_INFO_LOOKUP_API_KEY"):
        pytest.skip("this Inspect builds no provider only to look a model up")
    source = Path(_model_info.__file__).read_text(encoding="utf-8")
    assert "api_key=MODEL_INFO_LOOKUP_API_KEY" in source
    assert _model_info.MODEL_INFO_LOOKUP_API_KEY == MODEL_INFO_LOOKUP_API_KEY
