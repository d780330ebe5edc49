"""benchmarks/log_equality.py, the check that a change of the code left its logs as they were:
two real runs of the same task differ only from run to run (ids, times), which it passes; a run
whose answers differ fails it, with the fields that differ named."""

import subprocess
import sys
from pathlib import Path

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import match
from inspect_ai.solver import Generate, Solver, TaskState, solver

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "log_equality.py"


@solver
def answer(text: str) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content("none", text)
        return state

    return solve


def run(log_dir: Path, text: str) -> None:
    task = Task(
        name="same_task",
        dataset=[Sample(input=f"question {i}", target="4", id=f"s{i}") for i in range(3)],
        solver=answer(text),
        scorer=match(),
    )
    [log] = inspect_eval(task, model="none", log_dir=str(log_dir), display="none")
    assert log.status == "success"


def compare(before: Path, after: Path, *allow: str) -> subprocess.CompletedProcess[str]:
    allowed = [arg for field in allow for arg in ("--allow", field)]
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(before), str(after), *allowed],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_two_runs_of_the_same_answers_differ_only_from_run_to_run(tmp_path):
    run(tmp_path / "before" / "logs", "4")
    run(tmp_path / "after" / "logs", "4")
    done = compare(tmp_path / "before", tmp_path / "after")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 samples against 3" in done.stdout
    assert "0 unpaired logs, 0 fields that differ and should not" in done.stdout
    assert " run " in done.stdout and ".eval.run_id" in done.stdout  # listed, as from run to run
    assert "DIFFERS" not in done.stdout


def test_other_answers_are_named_field_by_field(tmp_path):
    run(tmp_path / "before" / "logs", "4")
    run(tmp_path / "after" / "logs", "5")
    done = compare(tmp_path / "before", tmp_path / "after")
    assert done.returncode == 1, done.stdout + done.stderr
    differs = [
        line.split()[2].rstrip(":") for line in done.stdout.splitlines() if "DIFFERS" in line
    ]
    assert ".samples[].scores.match.value" in differs
    assert ".samples[].output.completion" in differs
    assert ".results.scores[].metrics.accuracy.value" in differs
    # A field allowed by name no longer fails the comparison; the others still do.
    done = compare(tmp_path / "before", tmp_path / "after", ".samples[].scores.match.value")
    assert done.returncode == 1
    assert "ALLOWED" in done.stdout


def test_a_log_without_its_pair_fails(tmp_path):
    run(tmp_path / "before" / "logs", "4")
    (tmp_path / "after").mkdir()
    done = compare(tmp_path / "before", tmp_path / "after")
    assert done.returncode == 1
    assert "only in before" in done.stdout
