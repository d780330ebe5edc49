"""`heval-inspect report` on logs as Inspect writes them: k given in every form Inspect's command
line and Python API accept, and a shard (or a whole run) retried beside the log that failed.

Every log here is made by a real `inspect eval` (the reference solver, or the report tests'
replayed completions, tests/report_logs.py); a failed log is a real log rewritten with the status
and error that an interrupted or crashed run leaves.
"""

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalError, read_eval_log, write_eval_log

from heval_inspect.report import ReportError, build_report
from heval_inspect.solvers import reference
from heval_inspect.tasks import humaneval, humaneval_infilling

from .report_logs import run as run_eval

# Real logs whose programs run in the local sandbox (tests/report_logs.py says why).
pytestmark = [pytest.mark.data, pytest.mark.slow]

BIN = Path(sys.executable).parent
LIMIT = 2
EPOCHS = 3
# `-T` forms of k, with the ks each means. Inspect stores the first as ["1", "3"] (it splits a
# plain value at its commas), the second as [1, 3] (it reads the value as YAML), the third as 3.
CLI_FORMS = {"k=1,3": [1, 3], "k=[1,3]": [1, 3], "k=3": [3]}
API_FORMS = {"int": (3, [3]), "list of ints": ([1, 3], [1, 3]), "string": ("1,3", [1, 3])}
FAILED = ("error", "cancelled", "started")


def _results(folder: Path, out: Path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """`heval-inspect report FOLDER --out OUT`, and its results.csv (none if it failed)."""
    run = subprocess.run(
        [str(BIN / "heval-inspect"), "report", str(folder), "--out", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    results = out / "results.csv"
    if not results.exists():
        return run, []
    return run, list(csv.DictReader(results.read_text(encoding="utf-8").splitlines()))


@pytest.fixture(scope="module")
def cli_logs(tmp_path_factory) -> dict[str, Path]:
    """For each -T form of k, a log folder: a real `inspect eval` of the reference solver on
    LIMIT tasks, EPOCHS epochs."""
    work = tmp_path_factory.mktemp("cli")
    folders = {}
    for number, form in enumerate(CLI_FORMS):
        folders[form] = work / f"logs-{number}"
        run = subprocess.run(
            [str(BIN / "inspect"), "eval", "heval_inspect/humaneval", "--model", "none",
             "--solver", "heval_inspect/reference", "--limit", str(LIMIT), "--epochs",
             str(EPOCHS), "-T", form, "-T", "sandbox=local", "--log-dir", str(folders[form]),
             "--display", "none"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
    return folders


@pytest.fixture(scope="module")
def cli_reports(cli_logs, tmp_path_factory) -> dict[str, tuple]:
    """`heval-inspect report` on each form's log folder: how it ended, and its results.csv."""
    work = tmp_path_factory.mktemp("cli-reports")
    return {form: _results(folder, work / folder.name) for form, folder in cli_logs.items()}


@pytest.mark.parametrize("form", CLI_FORMS)
def test_k_from_the_command_line_gives_its_pass_at_k(cli_reports, form):
    run, rows = cli_reports[form]
    assert run.returncode == 0, run.stderr
    passes = {row["figure"]: float(row["value"]) for row in rows if row["figure"][:5] == "pass@"}
    # The reference solver answers every task with its canonical solution: all pass.
    assert passes == {f"pass@{k}": 1.0 for k in CLI_FORMS[form]}
    assert {int(row["epochs_min"]) for row in rows} == {EPOCHS}


def test_the_forms_of_the_same_ks_give_the_same_results(cli_reports):
    (_, one), (_, other), (_, three) = (cli_reports[form] for form in CLI_FORMS)
    assert one and one == other
    assert [row for row in one if row["figure"] != "pass@1"] == three


@pytest.fixture(scope="module")
def api_logs(tmp_path_factory) -> dict[str, str]:
    """For each Python form of k: a real eval of the reference solver on LIMIT tasks."""
    work = tmp_path_factory.mktemp("api")
    logs = {}
    for name, (k, _) in API_FORMS.items():
        [log] = inspect_eval(
            humaneval(k=k, sandbox="local"),
            model="none",
            solver=reference(),
            limit=LIMIT,
            epochs=EPOCHS,
            log_dir=str(work / name.replace(" ", "-")),
            display="none",
        )
        assert log.status == "success", log.error
        logs[name] = log.location
    return logs


@pytest.mark.parametrize("name", API_FORMS)
def test_k_from_the_python_api_gives_its_pass_at_k(api_logs, name):
    [result] = build_report([api_logs[name]]).results
    assert result.ks == API_FORMS[name][1]
    assert {figure: f.value for figure, f in result.groups["humaneval"].items()} == {
        **{f"pass@{k}": 1.0 for k in API_FORMS[name][1]},
        "exact_match": 1.0,
        "exact_match_stripped": 1.0,
    }


def test_a_log_that_names_no_k_has_pass_at_1(api_logs, tmp_path):
    # Older versions of Inspect recorded only the task arguments given, not the defaults.
    log = read_eval_log(api_logs["string"])
    del log.eval.task_args["k"]
    write_eval_log(log, str(tmp_path / "no-k.eval"))
    [result] = build_report([str(tmp_path / "no-k.eval")]).results
    assert result.ks == [1] and result.groups["humaneval"]["pass@1"].value == 1.0


# ---------------------------------------------------------------------- retried logs


def _failed(source: str, target: Path, status: str) -> str:
    """The log a run (or a shard) leaves when it fails (status "error") or is stopped
    ("cancelled", or "started" when its process is killed): part of the samples, no results."""
    log = read_eval_log(source)
    log.status = status
    log.results = None
    log.samples = log.samples[: len(log.samples) // 2]
    if status == "error":
        log.error = EvalError(
            message="RuntimeError: the sandbox's container exited",
            traceback="Traceback (most recent call last):\nRuntimeError: the sandbox's container "
            "exited\n",
            traceback_ansi="RuntimeError: the sandbox's container exited",
        )
    write_eval_log(log, str(target))
    return str(target)


def _folder(folder: Path, logs: dict[str, str]) -> Path:
    """A folder of copies of the logs, by new name."""
    folder.mkdir()
    for name, source in logs.items():
        shutil.copy(source, folder / name)
    return folder


def _shards(report_logs) -> dict[str, str]:
    return {f"shard-{i}.eval": log for i, log in enumerate(report_logs["shards"], start=1)}


def _figures(report) -> dict[tuple, float]:
    [result] = report.results
    return {
        (group, name, part): getattr(figure, part)
        for group, named in result.groups.items()
        for name, figure in named.items()
        for part in ("value", "stderr")
    }


@pytest.mark.parametrize("status", FAILED)
def test_a_shard_retried_after_a_failed_log_merges_with_its_successful_log(
    report_logs, tmp_path, status
):
    shards = _shards(report_logs)
    failed = _failed(report_logs["shards"][1], tmp_path / "shard-2-failed.eval", status)
    folder = _folder(tmp_path / "logs", {**shards, "shard-2-failed.eval": failed})
    report = build_report([str(folder)])
    [run] = report.runs
    assert run.shards == "1-4 of 4"
    assert [Path(file).name for file in run.files] == list(shards)
    assert _figures(report) == _figures(build_report(report_logs["shards"]))
    whole = _figures(build_report([report_logs["infilling"]]))
    assert _figures(report) == pytest.approx(whole, abs=1e-12, nan_ok=True)
    # The failed log's own note ("ended with status ...") goes with it.
    note = f"ignored shard-2-failed.eval (status {status!r}): shard 2 of 4 has a successful log"
    assert run.notes == [f"{note}, shard-2.eval."]


def test_a_shard_run_twice_counts_its_newest_log_and_names_the_other(report_logs, tmp_path):
    # Shard 2 of 4 run again, for real, with the same completions: two successful logs of it.
    shards = _shards(report_logs)
    samples = Path(report_logs["infilling"]).parents[1] / "infilling.jsonl"
    again = run_eval(
        humaneval_infilling(
            samples=str(samples), partial=True, k="1,2", shard="2/4", sandbox="local"
        ),
        tmp_path / "again",
        tags=["replayed"],
    )
    folder = _folder(tmp_path / "logs", {**shards, "shard-2-again.eval": again})
    report = build_report([str(folder)])
    [merged] = report.runs
    assert [Path(file).name for file in merged.files] == [
        "shard-1.eval", "shard-2-again.eval", "shard-3.eval", "shard-4.eval"
    ]  # fmt: skip
    [note] = merged.notes
    assert note.startswith("2 successful logs of shard 2 of 4: counted the newest, shard-2-again")
    assert "left out shard-2.eval (started " in note
    assert _figures(report) == _figures(build_report(report_logs["shards"]))


def test_a_shard_with_only_failed_logs_is_refused_naming_them(report_logs, tmp_path):
    shards = _shards(report_logs)
    del shards["shard-2.eval"]
    first = _failed(report_logs["shards"][1], tmp_path / "shard-2-error.eval", "error")
    second = _failed(report_logs["shards"][1], tmp_path / "shard-2-stopped.eval", "cancelled")
    folder = _folder(
        tmp_path / "logs", {**shards, "shard-2-error.eval": first, "shard-2-stopped.eval": second}
    )
    with pytest.raises(ReportError, match="no successful log") as refused:
        build_report([str(folder)])
    message = str(refused.value)
    assert f"{folder / 'shard-2-error.eval'} (status 'error')" in message
    assert f"{folder / 'shard-2-stopped.eval'} (status 'cancelled')" in message
    assert "inspect eval-retry" in message


def test_a_run_retried_after_a_failed_log_is_its_successful_log(report_logs, tmp_path):
    failed = _failed(report_logs["infilling"], tmp_path / "failed.eval", "error")
    folder = _folder(
        tmp_path / "logs", {"failed.eval": failed, "run.eval": report_logs["infilling"]}
    )
    report = build_report([str(folder)])
    [run] = report.runs
    assert [Path(file).name for file in run.files] == ["run.eval"]
    assert _figures(report) == _figures(build_report([report_logs["infilling"]]))
    assert run.notes == [
        "ignored failed.eval (status 'error'): the run has a successful log, run.eval."
    ]


def test_a_run_retried_with_inspect_eval_retry_reports_its_successful_log(
    cli_logs, cli_reports, tmp_path
):
    folder = tmp_path / "logs"
    folder.mkdir()
    [log] = cli_logs["k=1,3"].glob("*.eval")
    _failed(str(log), folder / "failed.eval", "error")
    retry = subprocess.run(
        [str(BIN / "inspect"), "eval-retry", str(folder / "failed.eval"), "--log-dir",
         str(folder), "--display", "none"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    # eval-retry runs the samples the failed log lacks, into a new log beside it.
    assert retry.returncode == 0, retry.stderr
    run, rows = _results(folder, tmp_path / "report")
    assert run.returncode == 0, run.stderr
    # The note as printed, wrapped at the terminal's (or COLUMNS') width.
    printed = " ".join(run.stdout.split())
    assert "ignored failed.eval (status 'error'): the run has a successful log" in printed
    assert rows == cli_reports["k=1,3"][1]


def test_a_run_given_twice_without_a_successful_log_is_refused(report_logs, tmp_path):
    source = report_logs["infilling"]
    logs = {
        f"run-{number}.eval": _failed(source, tmp_path / f"{status}.eval", status)
        for number, status in enumerate(("error", "cancelled"))
    }
    folder = _folder(tmp_path / "logs", logs)
    with pytest.raises(ReportError, match="2 logs are the same run") as refused:
        build_report([str(folder)])
    message = str(refused.value)
    for name, status in zip(logs, ("error", "cancelled"), strict=True):
        assert f"{folder / name} (status {status!r})" in message


@pytest.fixture(scope="module")
def run_twice(tmp_path_factory) -> Path:
    """The README's first eval, run twice into one folder (on LIMIT tasks)."""
    folder = tmp_path_factory.mktemp("twice") / "logs"
    for _ in range(2):
        ran = subprocess.run(
            [str(BIN / "inspect"), "eval", "heval_inspect/humaneval", "--model", "none",
             "--solver", "heval_inspect/reference", "--limit", str(LIMIT), "--log-dir",
             str(folder), "--display", "none"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    return folder


@pytest.mark.docker  # the README's first eval, in the sandbox it uses
def test_a_run_logged_twice_is_reported_from_its_newest_log_naming_the_other(run_twice, tmp_path):
    older, newer = sorted(run_twice.glob("*.eval"), key=lambda f: read_eval_log(
        str(f), header_only=True).eval.created)  # fmt: skip
    report, rows = _results(run_twice, tmp_path / "report")
    assert report.returncode == 0, report.stderr
    assert {row["run"] for row in rows} == {"reference (humaneval 4-A)"}
    # One line says which log counts and which is left out, and how to choose another.
    printed = " ".join(report.stdout.split())
    assert (
        f"note: reference (humaneval 4-A): 2 successful logs of the run: counted the newest, "
        f"{newer.name} (started " in printed
    )
    assert f"left out {older.name} (started " in printed
    assert "give its file alone" in printed
    markdown_ = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert newer.name in markdown_.split("## Results")[0]  # the Runs table's logs
    assert older.name not in markdown_.split("## Results")[0]
    # Given alone, the older log is the run.
    alone, rows_alone = _results(older, tmp_path / "alone")
    assert alone.returncode == 0, alone.stderr
    assert "note:" not in alone.stdout and rows_alone == rows


def test_a_newcomers_folder_of_whole_sharded_and_variant_runs_reports_every_run(tmp_path):
    # What the README's commands leave in one folder: modelA run whole and, again, in two shards
    # (`heval-inspect parallel`), modelB run whole, and both on the renamed variant; each a real
    # `inspect eval` of replayed completions (tests/report_logs.py) on a few problems.
    from .report_logs import PATTERN, humaneval_completions

    files = humaneval_completions(tmp_path)
    logs = tmp_path / "logs"
    runs = {"modelA": files["canonical"], "modelB": files["mutant"]}
    for label, samples in runs.items():
        for variant in ("original", "renamed"):
            task = humaneval(
                samples=samples, partial=True, timeout=1.0, variant=variant, sandbox="local"
            )
            run_eval(task, logs, metadata={"label": label}, epochs=1)
    for shard in ("1/2", "2/2"):
        task = humaneval(
            samples=runs["modelA"], partial=True, timeout=1.0, shard=shard, sandbox="local"
        )
        run_eval(task, logs, metadata={"label": "modelA"}, epochs=1)
    assert len(list(logs.glob("*.eval"))) == 6

    run, results = _results(logs, tmp_path / "report")
    assert run.returncode == 0, run.stderr
    version = results[0]["version"]
    assert {row["run"] for row in results} == {
        f"{model} (humaneval {version}{variant})" for model in runs for variant in ("", ", renamed")
    }
    assert {row["tasks"] for row in results} == {str(len(PATTERN))}
    written = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "run both whole and in shards: counted its 1-2 of 2 shards" in written, written
