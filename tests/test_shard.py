"""Shards (`-T shard=i/n`): every task exactly once, whole problems, balanced. No sandbox needed."""

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from inspect_ai._util.registry import registry_lookup

import heval_inspect  # noqa: F401  (registers the package's tasks)
from heval_inspect.data import EXAMPLE_PROBLEMS, official_path
from heval_inspect.errors import TaskArgumentError
from heval_inspect.shard import Shard, parse_shard, split
from heval_inspect.tasks import humaneval, humaneval_infilling, problem_id


def problem_of(sample) -> str:
    return problem_id(str(sample.id))


@pytest.fixture(scope="module")
def infilling():
    return list(humaneval_infilling().dataset)


@pytest.fixture(scope="module")
def original():
    return list(humaneval().dataset)


@pytest.mark.data
@pytest.mark.parametrize("dataset", ["infilling", "original"])
def test_shards_cover_every_task_once_with_whole_problems_for_1_to_16(dataset, request):
    samples = request.getfixturevalue(dataset)
    largest_problem = max(Counter(map(problem_of, samples)).values())
    for count in range(1, 17):
        shards = split(samples, count, problem_of)
        assert len(shards) == count
        ids = [sample.id for shard in shards for sample in shard]
        assert sorted(ids) == sorted(sample.id for sample in samples), count
        assert len(ids) == len(set(ids))
        owners: dict[str, set[int]] = {}
        for number, shard in enumerate(shards):
            for sample in shard:
                owners.setdefault(problem_of(sample), set()).add(number)
        assert all(len(shard_numbers) == 1 for shard_numbers in owners.values()), count
        sizes = [len(shard) for shard in shards]
        assert max(sizes) - min(sizes) <= largest_problem, (count, sizes)
        # Each shard keeps the task's own order.
        order = {sample.id: position for position, sample in enumerate(samples)}
        for shard in shards:
            assert [order[s.id] for s in shard] == sorted(order[s.id] for s in shard)


@pytest.mark.data
def test_infilling_shards_are_balanced_by_tasks(infilling):
    # 8,652 tasks over 164 problems (the largest has 475 tasks): within a few tasks of even.
    sizes = [len(shard) for shard in split(infilling, 4, problem_of)]
    assert sum(sizes) == 8652 and max(sizes) - min(sizes) <= 13, sizes
    sizes = [len(shard) for shard in split(infilling, 16, problem_of)]
    assert max(sizes) - min(sizes) <= 60, sizes


@pytest.mark.data
def test_the_task_runs_its_shard_and_records_it_in_the_log_metadata(infilling):
    expected = split(infilling, 3, problem_of)
    for index in (1, 2, 3):
        task = humaneval_infilling(shard=f"{index}/3")
        assert [s.id for s in task.dataset] == [s.id for s in expected[index - 1]]
        recorded = task.metadata["shard"]
        assert recorded["index"] == index and recorded["count"] == 3
        assert recorded["numbering"] == "1-based"
        assert recorded["tasks"] == len(expected[index - 1])
        assert recorded["all_tasks"] == 8652 and recorded["all_problems"] == 164
        assert set(recorded["problems"]) == {problem_of(s) for s in expected[index - 1]}


@pytest.mark.parametrize(
    "name",
    [
        "humaneval",
        "humaneval_single_line_infilling",
        "humaneval_multi_line_infilling",
        "humaneval_random_span_infilling",
        "humaneval_random_span_infilling_light",
        "humaneval_infilling",
    ],
)
@pytest.mark.data
def test_every_task_takes_a_shard(name):
    task_function = registry_lookup("task", f"heval_inspect/{name}")
    whole = len(task_function().dataset)
    parts = [len(task_function(shard=f"{i}/2").dataset) for i in (1, 2)]
    assert sum(parts) == whole and min(parts) > 0


@pytest.mark.data
def test_no_shard_is_the_whole_task_without_shard_metadata():
    task = humaneval()
    assert len(task.dataset) == 164 and "shard" not in (task.metadata or {})
    assert len(humaneval(shard="1/1").dataset) == 164


@pytest.mark.data
def test_a_shard_of_a_replayed_file_is_checked_against_the_whole_task(tmp_path, original):
    rows = tmp_path / "samples.jsonl"
    rows.write_text(
        "".join(f'{{"task_id": "{s.id}", "completion": "    pass\\n"}}\n' for s in original)
    )
    parts = [humaneval(samples=str(rows), shard=f"{i}/2") for i in (1, 2)]
    assert sorted(s.id for part in parts for s in part.dataset) == sorted(s.id for s in original)


@pytest.mark.parametrize(
    "value, shard", [("1/4", Shard(1, 4)), ("4/4", Shard(4, 4)), (" 2 / 3 ", Shard(2, 3))]
)
def test_shard_values(value, shard):
    assert parse_shard(value) == shard
    assert parse_shard(None) is None


@pytest.mark.parametrize(
    "value, message",
    [
        ("0/4", "shards are numbered from 1 to n (1-based)"),
        ("5/4", "shards are numbered from 1 to n (1-based)"),
        ("1/0", "shards are numbered from 1 to n (1-based)"),
        ("2", "give the shard as i/n"),
        (2, "give the shard as i/n"),
        ("half", "give the shard as i/n"),
        (["1/2", "2/2"], "give the shard as i/n"),
    ],
)
def test_bad_shard_values_are_refused_saying_what_to_give(value, message):
    with pytest.raises(TaskArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        humaneval(shard=value)


@pytest.mark.data
def test_more_shards_than_problems_is_refused():
    example = str(official_path(EXAMPLE_PROBLEMS))
    with pytest.raises(TaskArgumentError, match=r"has only 1 HumanEval problem.*at most 1 shard"):
        humaneval_infilling(problem_file=example, shard="2/2")


def test_a_bad_shard_on_the_command_line_is_one_message_and_no_log(tmp_path):
    run = subprocess.run(
        [str(Path(sys.executable).with_name("inspect")), "eval", "heval_inspect/humaneval",
         "--model", "none", "-T", "shard=0/4", "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    output = " ".join((run.stdout + run.stderr).split())
    assert run.returncode != 0
    assert "shard=0/4: shards are numbered from 1 to n (1-based)" in output, output
    assert "Traceback" not in output and not (tmp_path / "logs").exists()


@pytest.mark.data
def test_limit_and_sample_id_pick_the_runs_samples_before_the_split():
    assert [s.id for s in humaneval(limit=3).dataset] == [f"HumanEval/{i}" for i in range(3)]
    assert [s.id for s in humaneval(limit="11-13").dataset] == [
        f"HumanEval/{i}" for i in (10, 11, 12)
    ]
    # -T sample_id=A,B arrives as a list; a single id as a string; in the task's order.
    for given in (["HumanEval/40", "HumanEval/7"], "HumanEval/40,HumanEval/7"):
        assert [s.id for s in humaneval(sample_id=given).dataset] == ["HumanEval/7", "HumanEval/40"]
    parts = [humaneval(limit=10, shard=f"{i}/2") for i in (1, 2)]
    assert sorted(s.id for p in parts for s in p.dataset) == sorted(
        s.id for s in humaneval(limit=10).dataset
    )
    assert {p.metadata["shard"]["all_tasks"] for p in parts} == {10}


@pytest.mark.parametrize(
    "argument, message",
    [
        ({"limit": 0}, "limit=0: give the number of samples to run, 1 or more"),
        ({"limit": "5-2"}, "limit='5-2': give the number of samples"),
        ({"limit": "0-3"}, "limit='0-3': give the number"),
        ({"limit": "1-2-3"}, "limit='1-2-3': give the number"),
        ({"limit": "ten"}, "limit='ten': give the number"),
        ({"limit": True}, "limit=True: give the number"),
        ({"limit": 2.5}, "limit=2.5: give the number"),
        ({"sample_id": ""}, "sample_id='': give one or more sample ids"),
    ],
)
def test_bad_limit_and_sample_id_values_are_refused_saying_what_to_give(argument, message):
    with pytest.raises(TaskArgumentError, match=re.escape(message)):
        humaneval(**argument)


@pytest.mark.data
def test_samples_a_task_lacks_are_refused_naming_close_ones():
    with pytest.raises(TaskArgumentError, match=re.escape("limit=200-300: this run has only 164")):
        humaneval(limit="200-300")
    with pytest.raises(
        TaskArgumentError, match=r"no sample Humaneval/7 \(did you mean HumanEval/7"
    ):
        humaneval(sample_id="Humaneval/7")
