"""`heval-inspect` as a user meets it: its version, its help, and its errors, each one line."""

import inspect
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from heval_inspect.data import HUMANEVAL, load_official
from heval_inspect.sandbox import DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT
from heval_inspect.score import NOT_TAKEN
from heval_inspect.tasks import humaneval_infilling

from .own_containers import OwnProjects, project_containers

HEVAL_INSPECT = str(Path(sys.executable).with_name("heval-inspect"))
INSPECT = str(Path(sys.executable).with_name("inspect"))


def test_version_is_the_installed_packages():
    answer = subprocess.run(
        [HEVAL_INSPECT, "--version"], capture_output=True, text=True, check=False
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout == f"heval-inspect {version('heval-inspect')}\n"


def slow_tasks(
    tmp_path: Path, count: int, seconds: float, answers: list[list[str]] | None = None
) -> tuple[str, str]:
    """A problem file of `count` tasks whose tests sleep `seconds` (so that a run lasts), and a
    completion file: each task's `answers` (its epochs), by default its canonical answer, which
    passes."""
    problems, samples = tmp_path / "problems.jsonl", tmp_path / "samples.jsonl"
    ids = [f"slow/{index}" for index in range(count)]
    problems.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": task_id,
                    "prompt": "def answer():\n",
                    "suffix": "",
                    "canonical_solution": "    return 42\n",
                    "test": f"import time\ntime.sleep({seconds})\n"
                    "def check(candidate):\n    assert candidate() == 42\n",
                    "entry_point": "answer",
                }
            )
            + "\n"
            for task_id in ids
        )
    )
    answers = answers or [["    return 42\n"]] * count
    samples.write_text(
        "".join(
            json.dumps({"task_id": task_id, "completion": answer}) + "\n"
            for task_id, epochs in zip(ids, answers, strict=True)
            for answer in epochs
        )
    )
    return str(problems), str(samples)


def score_command(
    tmp_path: Path, count: int = 2, seconds: float = 0, answers: list[list[str]] | None = None
) -> list[str]:
    problems, samples = slow_tasks(tmp_path, count, seconds, answers)
    return [
        "score", samples, "--task", "humaneval_infilling", "-T", f"problem_file={problems}",
        "--log-dir", str(tmp_path / "logs"),
    ]  # fmt: skip


def score(tmp_path: Path, environment: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [HEVAL_INSPECT, *score_command(tmp_path)],
        env=os.environ | {"HEVAL_POOL_SIZE": "1"} | environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize(
    "fault, says",
    [("not installed", "Docker is not installed"), ("not running", "Docker is not running")],
)
def test_score_without_docker_says_so_in_one_line_and_fails(tmp_path, fault, says):
    if fault == "not installed":
        environment = {"PATH": str(tmp_path)}  # no `docker` on it
    elif shutil.which("docker"):
        environment = {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    else:  # a machine without Docker: a client whose engine does not answer, as Docker's does
        client = tmp_path / "docker"
        client.write_text(
            "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
            " Is the docker daemon running?' >&2\nexit 1\n"
        )
        client.chmod(0o755)
        environment = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    answer = score(tmp_path, environment)
    assert answer.returncode == 1
    [line] = answer.stderr.splitlines()  # no traceback, no "Task exception was never retrieved"
    assert line.startswith(f"heval-inspect: {says}")
    assert answer.stdout == ""


def run_watched(
    command: list[str], environment: dict[str, str]
) -> tuple[subprocess.Popen, OwnProjects]:
    """The command started, and the compose projects it (and its descendants) names as it runs:
    its own containers, told apart from other runs' on the engine (tests/own_containers.py)."""
    run = subprocess.Popen(
        command,
        env=os.environ | {"HEVAL_POOL_SIZE": "1"} | environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return run, OwnProjects(pid=run.pid, every_seconds=0.05)


def left_behind(projects: OwnProjects) -> set[str]:
    """The run's containers still on the engine (running or not), once it has ended."""
    return project_containers(projects.stop(), stopped_too=True)


@pytest.mark.docker
@pytest.mark.parametrize(
    "variable, value",
    [
        # The base image can be neither found nor pulled: the image cannot be built.
        ("HEVAL_SANDBOX_BASE_IMAGE", "heval-inspect-no-such-base:0"),
        # A runtime Docker does not know: the image builds, the containers cannot start.
        ("HEVAL_SANDBOX_RUNTIME", "heval-no-such-runtime"),
    ],
)
def test_score_with_a_sandbox_that_cannot_start_says_why_in_one_line(tmp_path, variable, value):
    run, projects = run_watched([HEVAL_INSPECT, *score_command(tmp_path)], {variable: value})
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 1
    [line] = stderr.splitlines()
    # What to change, and docker's own words, which name the value.
    assert line.startswith("heval-inspect: ") and variable in line and value in line, line
    assert left_behind(projects) == set()
    # Where containers were made (they could not start), the watcher saw whose they were.
    assert variable != "HEVAL_SANDBOX_RUNTIME" or projects.projects


@pytest.mark.docker
# From a moment in the import of the package (which takes seconds) to one where programs run.
@pytest.mark.parametrize("moment", [0.2, 1.0, 2.0, 3.0, 4.0, "scoring"])
def test_score_interrupted_with_ctrl_c_at_any_moment_says_so_in_one_line(tmp_path, moment):
    run, projects = run_watched([HEVAL_INSPECT, *score_command(tmp_path, count=20, seconds=1)], {})
    said = []
    if moment == "scoring":
        while "programs" not in (line := run.stderr.readline()):  # its programs run
            said.append(line)
            assert line, "the run ended before it could be interrupted"
        said.append(line)
        time.sleep(2)
    else:
        time.sleep(moment)
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=120)
    lines = said + stderr.splitlines(keepends=True)
    assert run.returncode == 130, "".join(lines)
    assert all(line.startswith("heval-inspect") for line in lines), "".join(lines)
    [interrupted] = [line for line in lines if "interrupted" in line]
    assert interrupted == lines[-1]
    logs = list((tmp_path / "logs").glob("*.eval"))
    for log in logs:
        assert read_eval_log(str(log), header_only=True).status == "cancelled"
        assert str(log) in interrupted
    if moment == "scoring":
        assert logs, "".join(lines)
    assert stdout == ""
    assert left_behind(projects) == set()  # the pool was taken down on the way out
    assert moment != "scoring" or projects.projects  # (its containers were seen)


# The command, with the package's import (`heval_inspect.cli`) replaced by a module whose
# execution is EXEC_MODULE's body.
IMPORTING_THE_COMMAND = """
import os, signal, sys, types
import heval_inspect_launcher

class Finder:
    def find_spec(self, name, path=None, target=None):
        if name != "heval_inspect.cli":
            return None
        from importlib.machinery import ModuleSpec
        return ModuleSpec(name, self)
    def create_module(self, spec):
        return types.ModuleType(spec.name)
    def exec_module(self, module):
EXEC_MODULE
sys.meta_path.insert(0, Finder())
sys.exit(heval_inspect_launcher.main())
"""


def importing_the_command(exec_module: str) -> str:
    return IMPORTING_THE_COMMAND.replace("EXEC_MODULE\n", exec_module)


# A Ctrl-C that lands while a class is made during the import, in a descriptor's __set_name__
# (pydantic's fields have one): Python 3.11 reraises it as RuntimeError.
INTERRUPTED_IN_SET_NAME = importing_the_command(
    "        class Field:\n"
    "            def __set_name__(self, owner, name):\n"
    "                raise KeyboardInterrupt\n"
    '        exec("class Model:\\n    field = Field()\\n", {"Field": Field})\n'
)
# A real Ctrl-C (SIGINT) that lands in code of the package's import which swallows it (a bare
# `except:`), or turns it into an error of its own with no trace of it (pydantic-core, building a
# model's validator in Rust, raises a SchemaError that ends "KeyboardInterrupt: "): seen at about
# 0.6 s into the import, where the command then ran on to the end, or failed with a traceback.
INTERRUPTED_AND_HIDDEN = importing_the_command(
    "        caught = None\n"
    "        try:\n"
    "            os.kill(os.getpid(), signal.SIGINT)\n"
    "        except BaseException as error:\n"
    "            caught = type(error).__name__\n"
    '        if caught and sys.argv[1] == "turned":  # nothing links it to the Ctrl-C\n'
    '            raise ValueError(f"{caught}: ")\n'
    '        module.main = lambda: print("ran on") or 0\n'
)


@pytest.mark.parametrize("script, argument", [(INTERRUPTED_IN_SET_NAME, ""),
                                              (INTERRUPTED_AND_HIDDEN, "swallowed"),
                                              (INTERRUPTED_AND_HIDDEN, "turned")])  # fmt: skip
def test_ctrl_c_inside_an_import_that_wraps_swallows_or_hides_it_is_one_line(script, argument):
    answer = subprocess.run(
        [sys.executable, "-c", script, argument],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert answer.returncode == 130, answer.stderr
    assert answer.stderr == "heval-inspect: interrupted (Ctrl-C) before it started.\n"
    assert answer.stdout == ""


# The command, with a Ctrl-C sent to itself a moment after it enters one of the steps it awaits
# before any program runs (the pool's start, Inspect's header of the log).
INTERRUPTED_IN = """
import asyncio, os, signal, sys
import heval_inspect.score as score
from heval_inspect.cli import main

step = getattr(score, sys.argv[1])

async def interrupted(*args, **kwargs):
    asyncio.get_running_loop().call_later(0.3, os.kill, os.getpid(), signal.SIGINT)
    return await step(*args, **kwargs)

setattr(score, sys.argv[1], interrupted)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.docker
@pytest.mark.parametrize("step", ["standalone_pool", "eval_async"])
def test_score_interrupted_while_it_starts_says_so_in_one_line(tmp_path, step):
    command = [sys.executable, "-c", INTERRUPTED_IN, step, *score_command(tmp_path)]
    run, projects = run_watched(command, {})
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 130, stderr
    [line] = stderr.splitlines()
    assert line.startswith("heval-inspect: interrupted (Ctrl-C)")
    assert not (tmp_path / "logs").exists()
    assert left_behind(projects) == set()


RIGHT, WRONG = "    return 42\n", "    return 41\n"


@pytest.mark.docker
def test_score_ends_with_the_runs_headline_and_its_error_bar(tmp_path):
    # Five problems, two epochs each: per task 1, 1/2, 0, 1/2, 1 of its epochs pass.
    answers = [[RIGHT, RIGHT], [RIGHT, WRONG], [WRONG, WRONG], [WRONG, RIGHT], [RIGHT, RIGHT]]
    per_task = [1, 0.5, 0, 0.5, 1]
    mean = sum(per_task) / 5  # 0.6
    # The clustered standard error with one task per problem: that of a mean.
    stderr = math.sqrt(5 / 4 * sum(((x - mean) / 5) ** 2 for x in per_task))
    headline = (
        f"heval-inspect score: pass@1 {mean:.3f} ± {stderr:.3f} (stderr, clustered by problem)"
    )
    command = [HEVAL_INSPECT, *score_command(tmp_path, count=5, answers=answers)]
    one_log = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    assert one_log.stderr.splitlines()[-1] == headline, one_log.stderr
    [log] = (tmp_path / "logs").glob("*.eval")
    metrics = read_eval_log(str(log), header_only=True).results.scores[0].metrics
    assert (metrics["pass@1"].value, metrics["stderr"].value) == pytest.approx((mean, stderr))
    # Run as logs of two problems at most (shards 1/3 ... 3/3): the whole run's figure again.
    split = command[:-1] + [str(tmp_path / "split"), "--samples-per-log", "4"]
    logs = subprocess.run(split, capture_output=True, text=True, check=True, timeout=300)
    assert len(logs.stdout.split()) == 3
    assert logs.stderr.splitlines()[-1] == headline, logs.stderr


def export(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [HEVAL_INSPECT, "export", *arguments], capture_output=True, text=True, check=False
    )


@pytest.mark.docker
def test_export_of_a_models_log_needs_no_samples_file(tmp_path):
    subprocess.run(
        [INSPECT, "eval", "heval_inspect/humaneval", "--model", "none",
         "--solver", "heval_inspect/reference", "--limit", "3",
         "--log-dir", str(tmp_path), "--display", "none"],
        check=True, capture_output=True,
    )  # fmt: skip
    [log] = tmp_path.glob("*.eval")
    answer = export(str(log))
    assert answer.returncode == 0, answer.stderr
    results = log.with_name(f"{log.stem}_results.jsonl")
    assert answer.stdout == f"{results}\n"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert rows == [
        {"task_id": problem["task_id"], "completion": problem["canonical_solution"],
         "result": "passed", "passed": True}
        for problem in load_official(HUMANEVAL)[:3]
    ]  # fmt: skip


@pytest.mark.docker
def test_export_from_the_log_alone_is_the_export_from_its_samples_file(tmp_path):
    answers = [[RIGHT, RIGHT], [RIGHT, WRONG], [WRONG, WRONG], [WRONG, RIGHT], [RIGHT, RIGHT]]
    command = score_command(tmp_path, count=5, answers=answers)
    subprocess.run([HEVAL_INSPECT, *command], check=True, capture_output=True, timeout=300)
    [log] = (tmp_path / "logs").glob("*.eval")
    samples = Path(command[1])
    from_file = export(str(log), "--out", str(tmp_path / "from_file.jsonl"))
    assert from_file.returncode == 0, from_file.stderr
    kept = samples.rename(tmp_path / "elsewhere.jsonl")  # the log names a file that is gone
    from_log = export(str(log))
    assert from_log.returncode == 0, from_log.stderr
    rows = (tmp_path / "from_file.jsonl").read_text()
    assert Path(from_log.stdout.strip()).read_text() == rows
    results = [json.loads(line) for line in rows.splitlines()]
    assert [row["passed"] for row in results] == [r == RIGHT for epochs in answers for r in epochs]
    assert {row["result"] for row in results} == {"passed", "failed: "}  # an assertion failed
    # Named, the file is read again (its rows as they are), wherever it is.
    named = export(str(log), "--samples", str(kept), "--out", str(tmp_path / "named.jsonl"))
    assert named.returncode == 0, named.stderr
    assert (tmp_path / "named.jsonl").read_text() == rows


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda folder: folder / "missing.eval", "Cannot read the log"),
        (lambda folder: folder, "Cannot read the log"),
        (lambda folder: Path(slow_tasks(folder, 1, 0)[1]), "Cannot read the log"),
    ],
    ids=["missing", "a folder", "not a log"],
)
def test_export_of_what_is_not_a_log_says_so_in_one_line(tmp_path, make, says):
    given = make(tmp_path)
    answer = export(str(given))
    assert answer.returncode == 1
    [line] = answer.stderr.splitlines()
    assert line.startswith(f"heval-inspect: {says} {given}"), line


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["report", "{file}"], "{file} is not an Inspect log: name .eval or .json logs"),
        (["report", "{logs}", "--out", "{file}"], "--out {file} is a file: name a folder"),
        (["score", "{samples}", "--task", "humaneval", "-T", "partial=true", "--log-dir",
          "{file}"], "--log-dir {file} is a file: name a folder"),
    ],
    ids=["report of a file that is not a log", "report --out a file", "score --log-dir a file"],
)  # fmt: skip
def test_a_file_where_a_folder_or_log_is_wanted_is_one_line_before_any_work(
    tmp_path, arguments, says
):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.eval").write_bytes(b"")  # never read: the check comes first
    names = {"file": str(tmp_path / "notes.txt"), "logs": str(logs),
             "samples": slow_tasks(tmp_path, 1, 0)[1]}  # fmt: skip
    Path(names["file"]).write_text("not a folder\n")
    answer = subprocess.run(
        [HEVAL_INSPECT, *(argument.format(**names) for argument in arguments)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert answer.returncode == 1
    [line] = answer.stderr.splitlines()
    assert line.startswith(f"heval-inspect: {says.format(**names)}"), line
    assert answer.stdout == ""


def options_help(command: str) -> dict[str, str]:
    """Each option of a command's --help (as the command prints it), by its first name: the
    text of its entry, on one line."""
    answer = subprocess.run(
        [HEVAL_INSPECT, command, "--help"], capture_output=True, text=True, check=True
    )
    section = answer.stdout.split("\noptions:\n")[1]
    entries: dict[str, str] = {}
    for line in section.splitlines():
        if re.match(r"  -", line):  # an option's first line; the rest are indented further
            name = line.split()[0].rstrip(",")
            entries[name] = line.strip()
        elif line.startswith("   "):
            entries[name] += " " + line.strip()
    return entries


COMMANDS = ["export", "parallel", "report", "score"]
REQUIRED = {("score", "--task")}  # no default to name


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_every_command_names_its_default(command):
    entries = options_help(command)
    assert len(entries) > 1, entries  # -h and the command's own
    for name, entry in entries.items():
        if name != "-h" and (command, name) not in REQUIRED:
            assert "default" in entry, f"heval-inspect {command} --help: {entry}"


def test_score_help_names_the_task_arguments_defaults():
    entries = options_help("score")
    assert f"timeout={DEFAULT_TIMEOUT:g} seconds" in entries["-T"]
    assert f"memory_limit={DEFAULT_MEMORY_MIB} MiB" in entries["-T"]
    assert "./logs" in entries["--log-dir"]
    # every argument the tasks take and the command does not refuse, `variant` among them
    parameters = inspect.signature(humaneval_infilling).parameters.values()
    named = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    taken = named - set(NOT_TAKEN)
    listed = entries["-T"].split(": ", 1)[1].split(" (defaults", 1)[0]
    assert "variant" in taken
    assert set(listed.split(", ")) == taken, entries["-T"]
    assert "variant=original" in entries["-T"]
