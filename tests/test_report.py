"""`heval-inspect report` on real logs: its figures against a hand computation, its failure kinds
against the verdicts, shards merged into the whole run, and what it refuses to compare.

The hand computations below use only the known pass pattern (tests/report_logs.py), math and
numpy, never the package's code.
"""

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.scorer import match
from scipy import stats

from heval_inspect.data import HUMANEVAL, load_official
from heval_inspect.report import ReportError, build_report, plots, reading
from heval_inspect.report.failures import KINDS, kinds
from heval_inspect.report.numbers import p_value
from heval_inspect.report.render import markdown, write_all
from heval_inspect.schema import Cause
from heval_inspect.tasks import humaneval

from .report_logs import EPOCHS, MUTANTS, PATTERN, report_figures


def clustered(values: list[float]) -> tuple[float, float]:
    """Mean and standard error with one task per cluster (HumanEval: a task is a problem)."""
    g = len(values)
    mean = sum(values) / g
    return mean, math.sqrt(g / (g - 1) * sum(((v - mean) / g) ** 2 for v in values))


def wilson(p: float, stderr: float, g: int, trials: float) -> tuple[float, float]:
    """The report's interval with one task per problem, by docs/report.md's formulas: Wilson's on
    n = p (1 - p) / SE^2 kept within [g, g x trials], with Student's t on g - 1 degrees, its end
    towards the nearer of 0 and 1 as far as Jeffreys' on n (z / t)^2."""
    n = min(max(p * (1 - p) / stderr**2, g), g * trials) if 0 < p < 1 else g
    q = stats.t.ppf(0.975, g - 1)
    centre = (p + q * q / (2 * n)) / (1 + q * q / n)
    half = q / (1 + q * q / n) * math.sqrt(p * (1 - p) / n + q * q / (4 * n * n))
    low, high = centre - half, centre + half
    if 0 < p < 1 and p != 0.5:
        m = n * (stats.norm.ppf(0.975) / q) ** 2
        jeffreys = stats.beta(p * m + 0.5, (1 - p) * m + 0.5)
        if p < 0.5:
            low = min(low, jeffreys.ppf(0.025))
        else:
            high = max(high, jeffreys.isf(0.025))
    return max(0.0, low), min(1.0, high)


def passes() -> list[int]:
    return [answers.count("ok") for answers in PATTERN.values()]


def pass_at(n: int, c: int, k: int) -> float:
    return 1 - math.comb(n - c, k) / math.comb(n, k)


# ---------------------------------------------------------------------- no sandbox needed


def documented_kinds() -> list[str]:
    """The kinds of verdict docs/report.md promises ("Why they fail"), in its order: the names
    in backticks between its semicolons, less what its parentheses say of each."""
    text = (Path(__file__).parents[1] / "docs" / "report.md").read_text()
    section = text.split("Every verdict gets one kind", 1)[1].split("The kind is read", 1)[0]
    return re.findall(r"`([^`]+)`", re.sub(r"\([^()]*\)", "", " ".join(section.split())))


def test_every_cause_the_executor_records_gets_one_of_the_documented_kinds():
    documented = documented_kinds()
    assert documented[0] == "passed" and documented[-1] == "no verdict"
    # The report's columns and bars, in the documented order.
    assert list(KINDS) == documented
    given = dict(zip(Cause, kinds(np.array(list(Cause), dtype=object)), strict=True))
    # Every cause has a kind, and every kind but a sample error's is some cause's.
    assert set(given.values()) == set(documented) - {"no verdict"}
    # What docs/report.md says of the causes it names in words.
    assert [cause for cause, kind in given.items() if kind == "passed"] == [Cause.PASSED]
    assert given[Cause.WRONG_ANSWER] == "wrong answer"
    assert given[Cause.EXIT] == given[Cause.EXCEPTION] == "other runtime error"
    assert given[Cause.SIGNAL] == given[Cause.EXECUTOR_LOST] == "killed"
    assert given[Cause.TIME_LIMIT] == "timed out"


def test_a_log_of_another_task_is_refused_before_its_samples_are_read(tmp_path, monkeypatch):
    [_log] = inspect_eval(
        Task(dataset=[Sample(input="2 + 2", target="4")], scorer=match()),
        model="none",
        log_dir=str(tmp_path),
        display="none",
    )

    def parsed(file):
        raise AssertionError(f"{file}'s samples were read")

    monkeypatch.setattr(reading, "read_eval_log_sample_summaries", parsed)
    with pytest.raises(ReportError, match=r"not of one of heval_inspect's tasks: give only logs"):
        build_report([str(tmp_path)])


def test_the_help_names_the_output_folder_and_which_of_a_runs_logs_counts():
    shown = subprocess.run(
        [str(Path(sys.executable).with_name("heval-inspect")), "report", "--help"],
        capture_output=True, text=True, check=True, env=os.environ | {"COLUMNS": "100"},
    ).stdout  # fmt: skip
    text = " ".join(shown.split())
    assert "(default: heval-report, in the current folder)" in text
    assert "the newest counts" in text and "give its file alone" in text


# ---------------------------------------------------------------------- real logs
# The report's rules on real logs of real evals (tests/report_logs.py), whose programs run in the
# local sandbox: these tests test the report, not the sandbox (test_sandbox, test_isolation and
# test_hostile do), so they need the data files and no Docker; the evals take a minute or two, so
# they are slow too (out of the loop to run while editing).

docker = pytest.mark.docker
data, slow = pytest.mark.data, pytest.mark.slow


@data
@slow
def test_results_and_paired_difference_equal_a_hand_computation(report_logs, tmp_path):
    report = build_report([report_logs["canonical"], report_logs["mutant"]], baseline="canonical")
    results = {r.run.name: r for r in report.results}
    c = passes()
    # The mutant's pass@1 and pass@3 with their clustered standard errors, and its epochs.
    for k in (1, 3):
        value, stderr = clustered([pass_at(EPOCHS, ci, k) for ci in c])
        figure = results["mutant"].groups["humaneval"][f"pass@{k}"]
        assert figure.value == pytest.approx(value, abs=1e-9)
        assert figure.stderr == pytest.approx(stderr, abs=1e-9)
        # pass@k of 3 epochs: 3 / k independent draws of it per task.
        expected = wilson(value, stderr, len(c), EPOCHS / k)
        assert (figure.low, figure.high) == pytest.approx(expected, abs=1e-9)
        assert 0 <= figure.low < figure.value < figure.high <= 1
        assert results["canonical"].groups["humaneval"][f"pass@{k}"].value == 1.0
        assert results["canonical"].groups["humaneval"][f"pass@{k}"].stderr == 0.0
    assert results["mutant"].tasks["humaneval"] == len(PATTERN)
    assert results["mutant"].epochs == (EPOCHS, EPOCHS)
    # The same figure as the log's own metric.
    log = read_eval_log(report_logs["mutant"], header_only=True)
    assert log.results.scores[0].metrics["pass@1"].value == pytest.approx(
        results["mutant"].groups["humaneval"]["pass@1"].value, abs=1e-12
    )

    [comparison] = report.comparisons
    assert (comparison.baseline.name, comparison.other.name) == ("canonical", "mutant")
    differences = {d.figure: d for d in comparison.differences}
    for k in (1, 3):
        d = [pass_at(EPOCHS, ci, k) - 1.0 for ci in c]
        mean, stderr = clustered(d)
        # Student's t on g - 1 degrees of freedom (one task per problem).
        t = stats.t(len(c) - 1)
        p = 2 * t.sf(abs(mean / stderr))
        got = differences[f"pass@{k}"]
        assert got.difference == pytest.approx(mean, abs=1e-9)
        assert got.stderr == pytest.approx(stderr, abs=1e-9)
        assert got.p_value == pytest.approx(p, abs=1e-9)
        assert (got.low, got.high) == pytest.approx(
            (mean - t.ppf(0.975) * stderr, mean + t.ppf(0.975) * stderr), abs=1e-9
        )
        assert got.minimum_detectable == pytest.approx(
            (t.ppf(0.975) + t.ppf(0.80)) * stderr, abs=1e-9
        )
        assert got.tasks == len(PATTERN)
    got = differences["pass@1"]
    assert got.baseline_better == sum(ci < EPOCHS for ci in c)
    assert got.other_better == 0 and got.same == sum(ci == EPOCHS for ci in c)
    # The numbers are those the Markdown and CSV files show.
    files = write_all(report, tmp_path)
    rows = list(csv.DictReader(files["differences"].read_text(encoding="utf-8").splitlines()))
    [row] = [r for r in rows if r["figure"] == "pass@1"]
    assert float(row["p_value"]) == pytest.approx(got.p_value, rel=1e-12)
    assert f"{got.difference:.3f} [{got.low:.3f}, {got.high:.3f}]" in markdown(report)
    assert f"| {p_value(got.p_value)} |" in markdown(report)


@data
@slow
def test_failure_kinds_count_the_verdicts(report_logs, tmp_path):
    report = build_report([report_logs["mutant"]])
    [row] = report.failures
    expected = dict.fromkeys(row.counts, 0)
    for answers in PATTERN.values():
        for answer in answers:
            expected["passed" if answer == "ok" else MUTANTS[answer][1]] += 1
    assert row.counts == expected
    # Against the log's own verdicts: passes, time-outs (the loop and the crash, as in the
    # reference) and failures.
    log = read_eval_log(report_logs["mutant"])
    verdicts = [s.scores["unit_tests"].metadata["verdict"] for s in log.samples]
    assert row.counts["passed"] == verdicts.count("passed")
    assert row.counts["timed out"] + row.counts["killed"] == verdicts.count("timed out")
    assert sum(v.startswith("failed") for v in verdicts) == row.total - verdicts.count(
        "passed"
    ) - verdicts.count("timed out")
    errors = {s.scores["unit_tests"].metadata["error"] for s in log.samples}
    assert {"AssertionError", "SyntaxError", "IndentationError", "NameError",
            "ZeroDivisionError", "MemoryError"} <= errors  # fmt: skip
    # Read by value: the reason's words may change, the kinds may not.
    reworded = tmp_path / "reworded.eval"
    for sample in log.samples:
        sample.scores["unit_tests"].metadata["reason"] = "reworded"
    write_eval_log(log, str(reworded))
    [row_reworded] = build_report([str(reworded)]).failures
    assert row_reworded.counts == row.counts


@data
@slow
def test_a_log_that_does_not_record_causes_is_refused_with_what_to_do(report_logs, tmp_path):
    log = read_eval_log(report_logs["canonical"])
    for sample in log.samples:
        del sample.scores["unit_tests"].metadata["cause"]
    old = tmp_path / "old.eval"
    write_eval_log(log, str(old))
    with pytest.raises(ReportError, match=r"does not record how each program ended.*inspect score"):
        build_report([str(old)])


@docker
@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_a_program_the_out_of_memory_killer_ends_is_a_memory_failure(sandbox, tmp_path):
    # Two processes of one program whose memory together passes the container's limit, under
    # the largest memory limit (which the container reaches first): the kernel's out-of-memory
    # killer ends the larger, the program's main process, and the run goes on: the next program
    # passes.
    problem = load_official(HUMANEVAL)[0]
    hog = (
        "    return True\n"
        "import posix, time\n"
        "held = b'x' * (800 << 20)\n"
        "child = posix.fork()\n"
        "if child == 0:\n"
        "    del held  # its own 800 MiB next, while the main process holds the first\n"
        "    grown = b'y' * (800 << 20)\n"
        "    time.sleep(60)\n"
        "posix.waitpid(child, 0)\n"
    )
    answers = {"out of memory": hog, "next": problem["canonical_solution"]}
    problems, samples = tmp_path / "problems.jsonl", tmp_path / "samples.jsonl"
    problems.write_text("".join(json.dumps(problem | {"task_id": t}) + "\n" for t in answers))
    samples.write_text(
        "".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in answers.items())
    )
    # Touching 1.6 GB of pages takes seconds on a slow machine: time enough for that.
    task = humaneval(
        problem_file=str(problems),
        samples=str(samples),
        sandbox=sandbox,
        timeout=10,
        memory_limit=1536,
    )
    [log] = inspect_eval(task, model="none", log_dir=str(tmp_path / "logs"), display="none",
                         max_samples=1)  # fmt: skip
    assert log.status == "success", log.error
    scores = {s.id: s.scores["unit_tests"].metadata for s in log.samples}
    killed = scores["out of memory"]
    assert killed["verdict"] == "timed out"  # the reference's verdict for a killed program
    assert killed["reason"].startswith("killed by the out-of-memory killer"), killed
    assert killed["cause"] == Cause.MEMORY
    assert scores["next"]["verdict"] == "passed"
    [row] = build_report([log.location]).failures
    assert (row.counts["memory"], row.counts["passed"], row.total) == (1, 1, 2)


@data
@slow
def test_four_shards_merge_into_the_whole_run(report_logs):
    whole = build_report([report_logs["infilling"]])
    merged = build_report(report_logs["shards"])
    [run] = merged.runs
    assert run.shards == "1-4 of 4" and len(run.files) == 4
    assert "1-4 of 4" in markdown(merged)
    expected, got = report_figures(whole), report_figures(merged)
    assert set(got) == set(expected) and len(got) > 100
    for key, (value, stderr) in expected.items():
        assert got[key][0] == pytest.approx(value, abs=1e-12), key
        # A bucket of tasks from one problem has no standard error (NaN), merged or whole.
        assert got[key][1] == pytest.approx(stderr, abs=1e-12, nan_ok=True), key
    # Every subset and blend of the log's own metrics, too.
    metrics = read_eval_log(report_logs["infilling"], header_only=True).results.scores[0].metrics
    [result] = merged.results
    headline = next(iter(metrics))  # whose standard error the log names `stderr`
    for group, named in result.groups.items():
        for name, figure in named.items():
            assert figure.value == pytest.approx(metrics[f"{group}/{name}"].value, abs=1e-12)
            error = "stderr" if f"{group}/{name}" == headline else f"{group}/{name}_stderr"
            assert figure.stderr == pytest.approx(metrics[error].value, abs=1e-12)
    assert {row.by for row in merged.gaps} == {"gap lines", "mid-line"}


@data
@slow
def test_a_log_read_once_is_read_again_only_when_it_changes(report_logs, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    log = tmp_path / "mutant.eval"
    shutil.copy(report_logs["mutant"], log)
    first = build_report([str(log)])
    assert len(list((tmp_path / "cache" / "heval_inspect" / "report").iterdir())) == 1

    def parsed_again(file):
        raise AssertionError(f"{file}'s sample summaries were parsed again")

    # The same report again, from the table the first one kept: not one summary is parsed.
    parse = reading.read_eval_log_sample_summaries
    monkeypatch.setattr(reading, "read_eval_log_sample_summaries", parsed_again)
    assert report_figures(build_report([str(log)])) == report_figures(first)
    # Kept by other code than this (another version of the package): not used.
    with monkeypatch.context() as other:
        other.setattr(reading, "READER", "another reader")
        with pytest.raises(AssertionError, match="parsed again"):
            build_report([str(log)])
    # A log rewritten in place (one failed sample now passes) is read again.
    monkeypatch.setattr(reading, "read_eval_log_sample_summaries", parse)
    edited = read_eval_log(str(log))
    score = next(
        s.scores["unit_tests"]
        for s in edited.samples
        if s.scores["unit_tests"].metadata["verdict"] != "passed"
    )
    score.value = {**score.value, "passed": 1.0}
    score.metadata = {**score.metadata, "verdict": "passed", "cause": "passed", "reason": ""}
    write_eval_log(edited, str(log))
    [before], [after] = first.failures, build_report([str(log)]).failures
    assert after.counts["passed"] == before.counts["passed"] + 1


@data
@slow
def test_shards_with_a_gap_or_an_overlap_are_refused_and_a_copy_counts_once(report_logs, tmp_path):
    shards = report_logs["shards"]
    with pytest.raises(ReportError, match=r"shard\(s\) 4 of 4 missing \(a gap\)"):
        build_report(shards[:3])
    # A task of shard 1 in shard 2's log too.
    log = read_eval_log(shards[1])
    log.samples.append(read_eval_log(shards[0]).samples[0])
    write_eval_log(log, str(tmp_path / "overlap.eval"))
    with pytest.raises(ReportError, match=r"1 task\(s\) in more than one shard \(an overlap\)"):
        build_report([shards[0], str(tmp_path / "overlap.eval"), *shards[2:]])
    # A copy of a shard's log is that shard's log again: one counts, and a note says which.
    copy = tmp_path / "copy.eval"
    shutil.copy(shards[0], copy)
    [run] = build_report([*shards, str(copy)]).runs
    [whole] = build_report(shards).runs
    assert run.shards == "1-4 of 4" and len(run.samples) == len(whole.samples)
    [note] = run.notes
    assert note.startswith("2 successful logs of shard 1 of 4: counted the newest")


@data
@slow
def test_a_run_made_whole_and_in_shards_counts_the_newer_and_names_the_other(report_logs, tmp_path):
    shards, whole = report_logs["shards"], report_logs["infilling"]
    [merged] = build_report(shards).runs
    # The whole run was made first: its shards count, and the note names the whole log.
    [run] = build_report([whole, *shards]).runs
    assert run.shards == "1-4 of 4" and run.samples.table() == merged.samples.table()
    [note] = run.notes
    assert note.startswith("run both whole and in shards: counted its 1-4 of 4 shards")
    assert f"set aside its whole log(s) {Path(whole).name}" in note and "(the newer)" in note
    # Made again whole after its shards: the whole log counts, and the note names the shards.
    later = read_eval_log(whole)
    later.eval.created = "2099-01-01T00:00:00+00:00"
    write_eval_log(later, str(tmp_path / "later.eval"))
    [run] = build_report([*shards, str(tmp_path / "later.eval")]).runs
    [note] = run.notes
    assert not run.shards and run.files == [str(tmp_path / "later.eval")], run.files
    assert note.startswith("run both whole and in shards: counted its whole log, later.eval")
    assert all(Path(shard).name in note for shard in shards), note
    # Shards with a gap beside a successful whole log: the whole log counts, saying why.
    [run] = build_report([whole, *shards[:3]]).runs
    assert run.files == [whole] and "complete, where its shards are not" in run.notes[0]
    # Neither complete (the whole log failed, a shard missing): refused, saying what to give.
    failed = read_eval_log(whole)
    failed.status = "error"
    write_eval_log(failed, str(tmp_path / "failed.eval"))
    with pytest.raises(ReportError, match="run whole and in shards, and neither is complete"):
        build_report([str(tmp_path / "failed.eval"), *shards[:3]])


def _altered(source: str, target: Path, change) -> str:
    log = read_eval_log(source)
    log.eval.metadata["label"] = "altered"
    change(log.eval.metadata)
    write_eval_log(log, str(target))
    return str(target)


@data
@slow
@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m["provenance"]["limits"].update(timeout_seconds=3.0),
         r"their time limits differ \(1 s and 3 s\)"),
        (lambda m: m.update(task_comparability_version=5, full_task_version="5-A"),
         r"task comparability versions differ \(4-A and 5-A"),
        (lambda m: m["provenance"]["data_files"][0].update(sha256="0" * 64),
         r"problem files' SHA-256 checksums differ"),
    ],
)  # fmt: skip
def test_runs_that_cannot_be_compared_are_refused_saying_why(report_logs, tmp_path, change,
                                                             message):  # fmt: skip
    altered = _altered(report_logs["mutant"], tmp_path / "altered.eval", change)
    with pytest.raises(ReportError, match=r"Cannot compare altered .* with canonical .*" + message):
        build_report([report_logs["canonical"], altered], baseline="canonical")


@data
@slow
def test_a_log_from_before_provenance_is_reported_with_a_note(report_logs, tmp_path):
    # Logs of task version 0 name no problem files: the mid-line split is left out, saying why.
    old = _altered(report_logs["infilling"], tmp_path / "old.eval", lambda m: m.pop("provenance"))
    report = build_report([old])
    assert {row.by for row in report.gaps} == {"gap lines"}
    assert any("which the log does not name" in note for note in report.notes), report.notes


@data
@slow
def test_the_command_prints_and_writes_the_report(report_logs, tmp_path):
    folder = Path(report_logs["canonical"]).parent
    out = tmp_path / "out"
    run = subprocess.run(
        [str(Path(sys.executable).with_name("heval-inspect")), "report", str(folder),
         report_logs["infilling"], "--out", str(out), "--baseline", "canonical"],
        capture_output=True, text=True, check=False,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    # Into a pipe: at most 100 columns (but the folder written into, the user's to choose), every
    # section, each run named once in each table.
    assert max(len(line) for line in lines if str(out) not in line) <= 100
    for section in ("Runs", "Results", "Paired comparison", "Why they fail", "pass@1 by gap"):
        assert any(line.startswith(f"{section} ─") for line in lines), section
    # The verdict first, in words.
    assert lines[0].startswith("Verdicts ─")
    assert lines[1].startswith("mutant is worse than canonical")
    tables = re.split(r"\n\s*\n", run.stdout)
    for name in ("canonical (humaneval", "mutant (humaneval", "replayed (humaneval_infilling"):
        assert sum(name in table for table in tables) >= 2, name
        assert all(table.count(name) <= 1 for table in tables), name
    assert "mutant (humaneval 4-A) minus canonical (humaneval 4-A)" in run.stdout
    names = {"report.md", "report.html", "results.csv", "differences.csv", "failures.csv",
             "gaps.csv"}  # fmt: skip
    assert names <= {p.name for p in out.iterdir()}
    results = list(csv.DictReader((out / "results.csv").read_text(encoding="utf-8").splitlines()))
    # Each standard error named for what it is: the metric's own and the clustered one.
    assert {"stderr_metric", "stderr_cr2"} <= set(results[0]) and "stderr" not in results[0]
    mutant = {r["figure"]: float(r["value"]) for r in results if r["run"].startswith("mutant")}
    assert mutant["pass@1"] == pytest.approx(np.mean(passes()) / EPOCHS, abs=1e-12)
    refused = subprocess.run(
        [str(Path(sys.executable).with_name("heval-inspect")), "report", str(folder),
         "--out", str(out), "--baseline", "nobody"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "--baseline nobody: no run has that name; the runs: canonical, mutant" in refused.stderr


@data
@slow
def test_identical_runs_stay_apart_in_every_plot(report_logs, tmp_path, monkeypatch):
    twin = _altered(
        report_logs["canonical"], tmp_path / "twin.eval", lambda m: m.update(label="twin")
    )
    report = build_report([report_logs["canonical"], twin, report_logs["mutant"]],
                          baseline="canonical")  # fmt: skip
    drawn = []
    monkeypatch.setattr(plots, "_svg", lambda figure: drawn.append(figure) or "")
    names = list(plots.all_plots(report))
    by_name = {name: figure.axes[0] for name, figure in zip(names, drawn, strict=True)}
    pass1 = by_name["pass1"]
    canonical, twin_ = (next(c for c in pass1.containers if c.get_label().startswith(name))
                        for name in ("canonical", "twin"))  # fmt: skip
    assert [b.get_height() for b in canonical] == [b.get_height() for b in twin_]
    assert {b.get_x() for b in canonical}.isdisjoint(b.get_x() for b in twin_)
    lines = {c.get_label().split()[0]: c.lines[0] for c in by_name["passk"].containers}
    assert list(lines["canonical"].get_ydata()) == list(lines["twin"].get_ydata())
    assert set(lines["canonical"].get_xdata()).isdisjoint(lines["twin"].get_xdata())
    assert lines["canonical"].get_marker() != lines["twin"].get_marker()
    rows = [label.get_text() for label in by_name["failures"].get_yticklabels()]
    assert (
        "canonical (humaneval 4-A) | humaneval" in rows
        and "twin (humaneval 4-A) | humaneval" in rows
    )
    rows = [label.get_text() for label in by_name["differences"].get_yticklabels()]
    assert "twin - canonical | humaneval" in rows and "mutant - canonical | humaneval" in rows


@data
@slow
def test_the_docs_show_what_the_command_prints(report_logs, tmp_path):
    # docs/report.md: the report of the two replayed files, as printed into a pipe (100 columns
    # wide, unless COLUMNS says otherwise).
    run = subprocess.run(
        [str(Path(sys.executable).with_name("heval-inspect")), "report",
         str(Path(report_logs["canonical"]).parent), "--baseline", "canonical", "--out",
         "report/"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    printed = re.sub(r"\n\n+", "\n\n", "\n".join(line.rstrip() for line in run.stdout.splitlines()))
    readme = (Path(__file__).parents[1] / "docs" / "report.md").read_text(encoding="utf-8")
    shown = readme.split("print:\n\n```text\n", 1)[1].split("```", 1)[0]
    assert printed.strip() == shown.strip()


@data
@slow
def test_a_comparison_counts_the_tasks_each_side_left_out(report_logs, tmp_path):
    # The mutant run without two of its problems, beside the whole canonical run.
    log = read_eval_log(report_logs["mutant"])
    log.samples = [s for s in log.samples if s.id not in ("HumanEval/6", "HumanEval/7")]
    write_eval_log(log, str(tmp_path / "fewer.eval"))
    report = build_report([report_logs["canonical"], str(tmp_path / "fewer.eval")],
                          baseline="canonical")  # fmt: skip
    [comparison] = report.comparisons
    assert (comparison.common_tasks, comparison.common_problems) == (6, 6)
    assert comparison.only_baseline == (2, 2) and comparison.only_other == (0, 0)
    assert {d.tasks for d in comparison.differences} == {6}
    text = markdown(report)
    assert (
        "| mutant (humaneval 4-A) | canonical (humaneval 4-A) | 6 (6 problems) | 0 "
        "| 2 (2 problems) |" in text
    )


@data
@slow
def test_a_figure_from_one_problem_shows_no_interval_and_says_why(report_logs):
    report = build_report([report_logs["infilling"]])
    single = [g for g in report.gaps if g.pass_at_1.interval is None]
    assert single and all(g.pass_at_1.stderr != g.pass_at_1.stderr for g in single)  # NaN
    assert "(one problem: no interval)" in markdown(report)
    # Every other interval is inside [0, 1], around its figure, of positive width.
    figures = [g.pass_at_1 for g in report.gaps if g.pass_at_1.interval is not None]
    figures += [f for r in report.results for named in r.groups.values() for f in named.values()]
    assert figures and all(0 <= f.low <= f.value <= f.high <= 1 and f.low < f.high for f in figures)


@data
def test_each_comparison_leads_with_a_sentence_that_says_who_won():
    from heval_inspect.report.stats import compare
    from heval_inspect.report.verdicts import verdict
    from heval_inspect.schema import VariantId

    from .test_intervals import first_problems_run

    def some(shift: int):
        return lambda task, epoch: (sum(map(ord, task)) + epoch + shift) % 3 != 0

    strong = first_problems_run("strong", lambda task, epoch: True)
    weak = first_problems_run("weak", some(0))
    twin = first_problems_run("twin", some(1))
    c = compare(strong, weak)
    d = c.differences[0]
    assert (d.figure, d.group) == ("pass@1", "sample_weighted") and d.high < 0
    assert verdict(c) == (
        f"weak is worse than strong on humaneval_infilling (sample_weighted) by "
        f"{100 * -d.difference:.1f} points of pass@1 (weak minus strong: {100 * d.difference:+.1f}"
        f" [{100 * d.low:+.1f}, {100 * d.high:+.1f}]); a difference this large would arise by "
        f"chance with p {p_value(d.p_value)}."
    )
    c = compare(weak, twin)
    d = c.differences[0]
    assert d.low < 0 < d.high
    said = verdict(c)
    assert said.startswith(
        f"twin and weak cannot be told apart on humaneval_infilling (sample_weighted): twin minus "
        f"weak is {100 * d.difference:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}] points"
    )
    detectable = f"{100 * d.minimum_detectable:.1f}"
    assert said.endswith(f"would detect is about {detectable} points (80% power)."), said
    # Runs that pass the same tasks: no spread to size a detectable difference from.
    copy = replace(weak, name="copy")
    assert verdict(compare(weak, copy)).endswith("; no task's pass@1 differs between them.")
    # A variant gap says what the variant costs the run.
    renamed = replace(weak, name="strong", variant=VariantId("renamed", 2))
    assert verdict(compare(strong, renamed)).startswith(
        f"renamed costs strong {100 * -compare(strong, renamed).differences[0].difference:.1f} "
        "points of pass@1 on humaneval_infilling (sample_weighted) (the variant minus the original"
    )
