"""Faults around the sandbox: no Docker, a container killed or removed mid-run, an executor killed
or stopped, residue no program could leave (with the next program already waiting in the
executor's input), a container that stops while the pool replaces another, an interrupted run.

Each is done for real (no engine reachable, `docker kill` / `docker rm -f` of a running pool
container, signals and processes sent in with `docker exec` as root, SIGINT to a running
`inspect eval`), and the run must end with every sample scored exactly once, after
`inspect eval-retry` where the run stopped.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.solver import Generate, TaskState, solver

from heval_inspect.inspect_internals import PrerequisiteError
from heval_inspect.sandbox import COMPOSE_FILE, EXECUTOR_SOURCE, EXECUTOR_USER
from heval_inspect.sandbox import pool as pool_module
from heval_inspect.sandbox.executor import PROGRAM_UID_BASE
from heval_inspect.sandbox.pool import PROJECT_PREFIX, new_pool
from heval_inspect.schema import Execution
from heval_inspect.solvers import reference
from heval_inspect.tasks import humaneval_infilling

from .own_containers import project_containers, projects_run_by

pytestmark = pytest.mark.docker

INSPECT = str(Path(sys.executable).with_name("inspect"))


def problem_file(tmp_path, seconds: list[float]) -> str:
    """One task per entry; its test sleeps that long, then passes with the canonical answer."""
    path = tmp_path / "problems.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"slow/{index}",
                    "prompt": "def answer():\n",
                    "suffix": "",
                    "canonical_solution": "    return 42\n",
                    "test": (
                        f"import time\ntime.sleep({delay})\n"
                        "def check(candidate):\n    assert candidate() == 42\n"
                    ),
                    "entry_point": "answer",
                }
            )
            + "\n"
            for index, delay in enumerate(seconds)
        )
    )
    return str(path)


@solver
def no_model_call(calls: list):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        calls.append(state.sample_id)
        return state

    return solve


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
@pytest.mark.parametrize(
    "fault, expected",
    [
        # heval_inspect's message for the pool, Inspect's own for its docker sandbox.
        ("not installed", "Docker is not installed|require Docker Engine"),
        ("not running", "Docker is not running|require a working Docker Engine"),
    ],
)
def test_no_docker_is_one_clear_error_before_any_sample_runs(
    sandbox, fault, expected, tmp_path, monkeypatch
):
    if fault == "not installed":
        monkeypatch.setenv("PATH", str(tmp_path))  # no `docker` on it
    else:
        monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    calls: list = []
    with pytest.raises(PrerequisiteError, match=expected):
        inspect_eval(
            humaneval_infilling(problem_file=problem_file(tmp_path, [0]), sandbox=sandbox),
            model="none",
            solver=no_model_call(calls),
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    assert calls == []  # no solver (so no model) was called


# Programs run as a uid of their container's own, from PROGRAM_UID_BASE up; the container's own
# processes are root's.
def is_programs_uid(uid: str) -> bool:
    return uid.isdigit() and int(uid) >= PROGRAM_UID_BASE


class WhenAProgramStarts(threading.Thread):
    """In the background: once a container of the run in process `owner` (this process by
    default; else an `inspect eval` started as a subprocess) runs a program, run the docker command
    `action(container)` on that container, once; `done` says whether it was done, and `projects`
    holds the compose projects of that run's containers (tests/own_containers.py). Other runs'
    containers on the engine (another developer's tests, CI beside them) are left alone."""

    def __init__(self, action, owner: int | None = None) -> None:
        super().__init__(daemon=True)
        self.action, self.owner, self.done = action, owner or os.getpid(), False
        self.projects: set[str] = set()
        self.start()

    def run(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.projects |= projects_run_by(self.owner)
            for container in project_containers(self.projects):
                # Seen from outside: a process of the programs' user. A probe run inside the
                # container would be counted in the processes an executor starting meanwhile
                # takes as its idle baseline, and hide a residue of as many processes.
                top = subprocess.run(
                    ["docker", "top", container, "-eo", "pid,uid"],  # docker needs the pid
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
                uids = [line.split()[1] for line in top.stdout.splitlines()[1:] if line.strip()]
                if top.returncode == 0 and any(map(is_programs_uid, uids)):
                    subprocess.run(["docker", *self.action(container)], check=True)
                    self.done = True
                    return
            time.sleep(0.1)

    def containers_left(self) -> set[str]:
        """The run's containers still on the engine, running or stopped."""
        return project_containers(self.projects, stopped_too=True)


def run_while(actor: "WhenAProgramStarts", task, tmp_path, **options):
    """The log of `task` run on the canonical answers (no model) while `actor` acts once; the
    run must succeed whatever the actor did."""
    [log] = inspect_eval(
        task,
        model="none",
        solver=reference(),
        log_dir=str(tmp_path / "logs"),
        display="none",
        **options,
    )
    actor.join()
    assert actor.done
    assert log.status == "success", log.error
    return log


def scored_once(log) -> dict[str, str]:
    ids = Counter(str(sample.id) for sample in log.samples)
    assert set(ids.values()) == {1}, ids
    return {str(s.id): s.scores["unit_tests"].metadata["verdict"] for s in log.samples}


@pytest.mark.parametrize("action", ["kill", "rm -f"])
def test_a_container_killed_or_removed_mid_program_is_replaced_and_the_program_run_again(
    action, tmp_path, monkeypatch, another_runs_pool
):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    killer = WhenAProgramStarts(lambda container: [*action.split(), container])
    log = run_while(
        killer, humaneval_infilling(problem_file=problem_file(tmp_path, [2, 0, 0])), tmp_path
    )
    assert scored_once(log) == {f"slow/{i}": "passed" for i in range(3)}
    assert killer.containers_left() == set()


def as_root(container: str, code: str) -> list[str]:
    """Python run in the container as root, in the background: what no program can do."""
    return ["exec", "-d", "--user", "0:0", container, "python3", "-c", code]


# Signals the executor (`python3 -I -c SOURCE [serve]`): the oldest process with its command line,
# the others (its decoy and the program's warden) being its forks.
SIGNAL_EXECUTOR = (
    "import os\nexecutors = [int(pid) for pid in filter(str.isdigit, os.listdir('/proc'))\n"
    "             if b'\\0-I\\0-c\\0' in open(f'/proc/{pid}/cmdline', 'rb').read()]\n"
    "os.kill(min(executors), {signal})\n"
)
# A process of the programs' user that stays a zombie: its root parent never reaps it.
UNREAPED_ZOMBIE = (
    "import os, time\nif os.fork() == 0:\n    os.setresgid(65534, 65534, 65534)\n"
    "    os.setresuid(65534, 65534, 65534)\n    os._exit(0)\ntime.sleep(600)\n"
)


@pytest.mark.parametrize(
    "signal_number", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"]
)
def test_a_lost_executor_gets_a_new_container_and_the_program_runs_again(
    signal_number, tmp_path, monkeypatch, another_runs_pool
):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    code = SIGNAL_EXECUTOR.replace("{signal}", str(int(signal_number)))
    signaller = WhenAProgramStarts(lambda container: as_root(container, code))
    # With timeout=2 a stopped executor is given up after 2 x 10 s of wall clock + 10 s of grace.
    log = run_while(
        signaller,
        humaneval_infilling(problem_file=problem_file(tmp_path, [1.5, 0, 0]), timeout=2),
        tmp_path,
    )
    assert scored_once(log) == {f"slow/{i}": "passed" for i in range(3)}
    replaced = {
        str(s.id): s.scores["unit_tests"].metadata.get("containers_replaced") for s in log.samples
    }
    assert sorted(replaced.values(), key=str) == [1, None, None]
    assert signaller.containers_left() == set()


def test_an_executor_lost_in_the_docker_sandbox_is_a_verdict_not_a_sample_error(
    tmp_path, another_runs_pool
):
    # Inspect's docker sandbox gives the sample a container of its own, removed with it: the
    # program whose executor ended without a verdict is `timed out` there, and the run goes on.
    code = SIGNAL_EXECUTOR.replace("{signal}", str(int(signal.SIGTERM)))
    signaller = WhenAProgramStarts(lambda container: as_root(container, code))
    log = run_while(
        signaller,
        humaneval_infilling(problem_file=problem_file(tmp_path, [2, 0]), sandbox="docker"),
        tmp_path,
    )
    assert scored_once(log) == {"slow/0": "timed out", "slow/1": "passed"}
    [lost] = [s for s in log.samples if s.id == "slow/0"]
    assert "executor ended" in lost.scores["unit_tests"].metadata["reason"]
    assert signaller.containers_left() == set()


# With more than one sample at a time, the next program waits in the executor's input while the
# first runs (executor_client.PIPELINE_DEPTH): it must not run in the container the first left
# unclean.
@pytest.mark.parametrize("max_samples", [1, 3], ids=["one at a time", "the next one waiting"])
def test_residue_the_executor_cannot_remove_gets_the_container_replaced(
    max_samples, tmp_path, monkeypatch, another_runs_pool
):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    planter = WhenAProgramStarts(lambda container: as_root(container, UNREAPED_ZOMBIE))
    # The first program runs long enough for the planted process to exist before it ends, however
    # slowly a busy machine runs `docker exec` (2 s were not always enough in CI).
    task = humaneval_infilling(problem_file=problem_file(tmp_path, [8, 0, 0]), timeout=20)
    log = run_while(planter, task, tmp_path, max_samples=max_samples)
    assert scored_once(log) == {f"slow/{i}": "passed" for i in range(3)}
    residues = {str(s.id): s.scores["unit_tests"].metadata.get("residue") for s in log.samples}
    # Found after the program that ran meanwhile (the container's pids counter: the planted
    # process, and its zombie once it has forked it); the others ran in the new container, clean.
    [dirty] = [sample for sample, residue in residues.items() if residue]
    assert set(residues[dirty]) == {"processes"} and residues[dirty]["processes"] >= 1
    replaced = {
        str(s.id): s.scores["unit_tests"].metadata.get("containers_replaced") for s in log.samples
    }
    assert replaced == {sample: 1 if sample == dirty else None for sample in residues}
    assert planter.containers_left() == set()


def test_an_executor_that_finds_residue_runs_no_further_program(tmp_path):
    # The pool sends a program while the one before it runs; once that one's container is found
    # unclean, the executor must not run the next at all (the pool runs it elsewhere).
    project = f"{PROJECT_PREFIX}test-{os.getpid()}"
    compose = ["docker", "compose", "-p", project, "-f", str(COMPOSE_FILE)]
    subprocess.run([*compose, "up", "-d"], check=True, capture_output=True)
    try:
        [container] = subprocess.run(
            [*compose, "ps", "-q"], check=True, capture_output=True, text=True
        ).stdout.split()
        executor = subprocess.Popen(
            ["docker", "exec", "-i", "--user", EXECUTOR_USER, container,
             "python3", "-I", "-c", EXECUTOR_SOURCE, "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        limits = {"seconds": 10, "wall_seconds": 30, "memory_bytes": 1 << 30, "file_bytes": 1 << 20,
                  "tasks": 64}  # fmt: skip
        # The executor's stdin is one that the tests themselves write to, so the second request
        # is waiting there while the first runs, and none follows.
        for program in ("import time\ntime.sleep(4)", "print('ran')"):
            executor.stdin.write(json.dumps({"program": program, **limits}) + "\n")
        executor.stdin.flush()
        time.sleep(1.5)
        subprocess.run(["docker", *as_root(container, UNREAPED_ZOMBIE)], check=True)
        executor.stdin.close()
        answers = [json.loads(line) for line in executor.stdout]
        executor.wait(timeout=30)
    finally:
        subprocess.run([*compose, "down", "--timeout", "1"], capture_output=True, check=False)
    [first] = answers
    assert first["status"] == "passed" and first["residue"]["processes"] >= 1


def test_a_container_stopping_while_another_is_replaced_fails_neither(monkeypatch):
    # Two programs that leave residue at once (under gVisor, the census's loopback programs): each
    # executor stops its own container as soon as it has answered, and the pool replaces them one
    # after the other. Here the second container stops, for real, just after the pool's
    # `compose up` for the first: the first replacement must count only the container it
    # started, not find the pool one short.
    monkeypatch.setenv("HEVAL_POOL_SIZE", "2")
    real_docker = pool_module.docker
    stopped: list[str] = []

    async def scenario() -> list[Execution | None]:
        pool = await new_pool(str(COMPOSE_FILE))
        try:
            await pool.start(EXECUTOR_SOURCE)
            first, second = pool.executors

            async def docker_then_stop_second(*args: str, **options):
                result = await real_docker(*args, **options)
                if "up" in args and not stopped:
                    stopped.append(second.container)
                    await real_docker("stop", "--time", "0", second.container)
                return result

            monkeypatch.setattr(pool_module, "docker", docker_then_stop_second)
            old = {first.container, second.container}
            await pool.replace(first, first.generation, "the test")
            await pool.replace(second, second.generation, "the test")
            assert stopped and {first.container, second.container}.isdisjoint(old)
            request = {"program": "print('ran')", "seconds": 3, "wall_seconds": 30,
                       "memory_bytes": 1 << 30, "file_bytes": 1 << 20, "tasks": 64}  # fmt: skip
            answers = [executor.run(request, 40) for executor in (first, second)]
            return [answer for answer, _ in await asyncio.gather(*answers)]
        finally:
            await pool.stop()

    answers = asyncio.run(scenario())
    assert [getattr(answer, "verdict", answer) for answer in answers] == ["passed", "passed"]
    assert [answer.stdout_bytes for answer in answers] == [4, 4]


def test_an_interrupted_run_is_completed_by_eval_retry(tmp_path, another_runs_pool):
    log_dir = tmp_path / "logs"
    environment = os.environ | {"HEVAL_POOL_SIZE": "1"}
    run = subprocess.Popen(
        [
            INSPECT, "eval", "heval_inspect/humaneval_infilling", "--model", "none",
            "--solver", "heval_inspect/reference", "--display", "none",
            "-T", f"problem_file={problem_file(tmp_path, [1] * 40)}",
            "--log-dir", str(log_dir),
        ],
        env=environment,
    )  # fmt: skip
    # Interrupted once its programs run (a fixed wait once fell in the pool's start-up on a busy
    # machine, and the run went on to the end), after a few of the 40 one-second programs.
    started = WhenAProgramStarts(lambda container: ["exec", container, "true"], owner=run.pid)
    started.join(timeout=90)
    assert started.done
    time.sleep(3)
    run.send_signal(signal.SIGINT)
    run.wait(timeout=60)
    [interrupted] = [read_eval_log(info) for info in list_eval_logs(str(log_dir))]
    assert interrupted.status in ("cancelled", "error")
    assert 0 < len(interrupted.samples or []) < 40
    assert started.containers_left() == set()  # the pool was taken down on the way out

    retry = subprocess.run(
        [INSPECT, "eval-retry", interrupted.location, "--log-dir", str(log_dir),
         "--display", "none"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert retry.returncode == 0, retry.stderr
    [completed] = [
        log
        for log in map(read_eval_log, list_eval_logs(str(log_dir)))
        if log.location != interrupted.location
    ]
    assert completed.status == "success"
    assert scored_once(completed) == {f"slow/{i}": "passed" for i in range(40)}


def test_a_killed_run_stops_its_containers_and_the_next_pool_removes_them(
    tmp_path, another_runs_pool
):
    # SIGKILL: no cleanup at all in the eval process (as a requeued batch job's SIGTERM, which
    # Inspect does not handle). Its executors see their input end and stop their containers.
    environment = os.environ | {"HEVAL_POOL_SIZE": "2"}
    run = subprocess.Popen(
        [
            INSPECT, "eval", "heval_inspect/humaneval_infilling", "--model", "none",
            "--solver", "heval_inspect/reference", "--display", "none",
            "-T", f"problem_file={problem_file(tmp_path, [1] * 20)}",
            "--log-dir", str(tmp_path / "logs"),
        ],
        env=environment,
    )  # fmt: skip
    started = WhenAProgramStarts(lambda container: ["exec", container, "true"], owner=run.pid)
    started.join(timeout=90)
    assert started.done
    killed = project_containers(started.projects)
    assert len(killed) == 2
    run.kill()
    run.wait(timeout=30)

    def running(container: str) -> bool:
        state = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Running}}", container],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return state.stdout.strip() == "true"

    deadline = time.monotonic() + 30
    while any(map(running, killed)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(map(running, killed))
    # The next eval's pool removes the stopped pool before it starts its own.
    [log] = inspect_eval(
        humaneval_infilling(problem_file=problem_file(tmp_path, [0])),
        solver=reference(), model="none", log_dir=str(tmp_path / "next"), display="none",
    )  # fmt: skip
    assert log.status == "success"
    assert started.containers_left() == set()
