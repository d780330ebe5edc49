"""Completions made elsewhere, in the reference's format: checked, replayed, exported back."""

import builtins
import hashlib
import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.data import (
    EXAMPLE_PROBLEMS,
    EXAMPLE_SAMPLES,
    DataError,
    check_completions,
    count_completions,
    official_path,
    read_completions,
)
from heval_inspect.export import export_results
from heval_inspect.solvers import replay
from heval_inspect.tasks import humaneval, humaneval_infilling


def write_rows(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.mark.data
def test_completion_file_groups_rows_by_task_in_order():
    completions = read_completions(official_path(EXAMPLE_SAMPLES))
    assert list(completions) == ["test/0"] and len(completions["test/0"]) == 10
    assert completions["test/0"][7] == "    return "
    assert count_completions(official_path(EXAMPLE_SAMPLES)) == {"test/0": 10}


def test_a_completion_file_can_be_read_for_some_tasks_only(tmp_path):
    rows = [{"task_id": t, "completion": f"{t}{n}"} for n in (1, 2) for t in "abc"]
    path = write_rows(tmp_path / "s.jsonl", rows)
    assert read_completions(path, only={"c", "a"}) == {"a": ["a1", "a2"], "c": ["c1", "c2"]}
    assert count_completions(path) == {"a": 2, "b": 2, "c": 2}


def test_a_completion_file_is_read_once_while_it_is_unchanged(tmp_path, monkeypatch):
    path = write_rows(tmp_path / "s.jsonl", [{"task_id": t, "completion": t} for t in "aba"])
    checked = check_completions(path)
    assert checked.counts == {"a": 2, "b": 1}
    assert checked.completions == {"a": ("a", "a"), "b": ("b",)}  # kept for the replay
    assert checked.sha256 == hashlib.sha256(Path(path).read_bytes()).hexdigest()
    with monkeypatch.context() as patched:  # the task, its solver and `score` ask it again
        patched.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} read again"))
        assert check_completions(path) is checked and count_completions(path) == checked.counts
    write_rows(Path(path), [{"task_id": "c", "completion": "longer than before"}])
    assert check_completions(path).counts == {"c": 1}  # changed on disk: read again


@pytest.mark.parametrize(
    "content, problem",
    [
        ("", "holds no completions"),
        ('{"task_id": "HumanEval/0"}\n', "line 1: expected a JSON object"),
        ("not json\n", "line 1: expected a JSON object"),
        ('{"task_id": "HumanEval/0", "completion": 3}\n', "completion string"),
    ],
)
@pytest.mark.parametrize("reader", [read_completions, count_completions, replay])
def test_malformed_completion_file_names_line_and_problem(tmp_path, content, problem, reader):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=problem):
        reader(str(path))  # the replay solver: when it is made, before any sample


@pytest.mark.data
def test_task_ids_of_another_task_are_refused_before_anything_runs(tmp_path):
    path = write_rows(tmp_path / "s.jsonl", [{"task_id": "HumanEval/0", "completion": "x"}])
    with pytest.raises(DataError, match="1 task id.*not problems of this task.*HumanEval/0"):
        humaneval_infilling(subsets="single_line", samples=path)


@pytest.mark.data
def test_missing_tasks_are_refused_unless_partial(tmp_path):
    path = write_rows(tmp_path / "s.jsonl", [{"task_id": "HumanEval/3", "completion": "x"}])
    with pytest.raises(DataError, match="no completion for 163 of the 164 tasks.*partial=true"):
        humaneval(samples=path)
    task = humaneval(samples=path, partial=True)
    assert [sample.id for sample in task.dataset] == ["HumanEval/3"]
    assert task.epochs == 1


@pytest.mark.data
def test_uneven_completion_counts_score_the_first_of_each(tmp_path, caplog):
    rows = [{"task_id": "HumanEval/0", "completion": str(n)} for n in range(3)]
    rows += [{"task_id": "HumanEval/1", "completion": "x"}] * 2
    task = humaneval(samples=write_rows(tmp_path / "s.jsonl", rows), partial=True)
    assert task.epochs == 2
    assert "tasks have from 2 to 3 completions; scoring the first 2" in caplog.text


@pytest.mark.docker
def test_reference_example_replayed_and_exported_as_the_reference_does(tmp_path):
    problems, samples = str(official_path(EXAMPLE_PROBLEMS)), str(official_path(EXAMPLE_SAMPLES))
    [log] = inspect_eval(
        humaneval_infilling(problem_file=problems, samples=samples, k="1,10"),
        model="none",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    metrics = log.results.scores[0].metrics
    # What the reference prints for its example: {'pass@1': 0.3, 'pass@10': 1.0}
    assert metrics["pass@1"].value == pytest.approx(0.3, abs=1e-12)
    assert metrics["pass@10"].value == 1.0

    out = export_results(log.location, out=str(tmp_path / "example_samples.jsonl_results.jsonl"))
    with open(out) as lines:
        results = [json.loads(line) for line in lines]
    with open(samples) as lines:
        inputs = [json.loads(line) for line in lines]
    assert [{k: r[k] for k in ("task_id", "completion")} for r in results] == inputs
    assert [r["passed"] for r in results] == [False] * 7 + [True] * 3
    assert results[1]["result"] == "timed out"
    assert results[0]["result"] == "failed: invalid syntax (<string>, line 3)"  # ...)1


@pytest.mark.data
def test_a_replayed_run_reads_its_completion_file_once(tmp_path, monkeypatch):
    samples = tmp_path / "samples.jsonl"  # a file no earlier test has checked in this process
    samples.write_bytes(official_path(EXAMPLE_SAMPLES).read_bytes())
    opened = []

    def counted(open_file):
        def opens(file, *args, **kwargs):
            if isinstance(file, str | Path) and Path(file).resolve() == samples.resolve():
                opened.append(file)
            return open_file(file, *args, **kwargs)

        return opens

    monkeypatch.setattr(builtins, "open", counted(builtins.open))
    monkeypatch.setattr(Path, "open", counted(Path.open))
    task = humaneval(
        problem_file=str(official_path(EXAMPLE_PROBLEMS)), samples=str(samples), sandbox="local"
    )
    [log] = inspect_eval(task, model="none", score=False, log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    with open(official_path(EXAMPLE_SAMPLES)) as lines:
        expected = [json.loads(line)["completion"] for line in lines]
    assert [sample.output.completion for sample in log.samples] == expected  # epochs 1 to 10
    assert len(opened) == 1  # the task's check: the replay answers from that read
