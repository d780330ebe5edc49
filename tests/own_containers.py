"""The containers a test's own run started, told apart from other runs' on the same Docker engine
(another developer's tests, CI beside a session, a user's eval): a test may count, wait for or
act on its own only.

A run's own are those of the compose projects that its process (or its descendants) names in its
docker commands: the pool's `docker exec ... CONTAINER` of each executor and its `docker compose
-p PROJECT`, Inspect's docker sandbox's `docker compose --project-name PROJECT`. Every container of
a pool, and of Inspect's docker sandbox, carries its project's compose label.
"""

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil

PROJECT_LABEL = "com.docker.compose.project"
# `docker exec` options that take a value (the rest are flags): the container follows them.
_EXEC_OPTIONS_WITH_VALUE = {"-u", "--user", "-e", "--env", "--env-file", "-w", "--workdir",
                            "--detach-keys"}  # fmt: skip


def _docker_commands(pid: int) -> list[list[str]]:
    """The command lines of the docker commands process `pid` and its descendants run now."""
    try:
        processes = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    commands = []
    for process in processes:
        try:
            command = process.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if command and Path(command[0]).name == "docker":
            commands.append(command)
    return commands


def _project_named(command: list[str]) -> str | None:
    for index, argument in enumerate(command[:-1]):
        if argument in ("-p", "--project-name"):
            return command[index + 1]
    for argument in command:
        if argument.startswith("--project-name="):
            return argument.partition("=")[2]
    return None


def _exec_container(command: list[str]) -> str | None:
    arguments = iter(command[2:])
    for argument in arguments:
        if argument in _EXEC_OPTIONS_WITH_VALUE:
            next(arguments, None)
        elif not argument.startswith("-"):
            return argument
    return None


_PROJECTS: dict[str, str] = {}  # a container's project, once known: it never changes


def _project_of(container: str) -> str | None:
    if container in _PROJECTS:
        return _PROJECTS[container]
    answer = subprocess.run(
        ["docker", "inspect", "-f", f'{{{{index .Config.Labels "{PROJECT_LABEL}"}}}}', container],
        capture_output=True,
        text=True,
        check=False,
    )
    if answer.returncode != 0 or not answer.stdout.strip():
        return None
    _PROJECTS[container] = answer.stdout.strip()
    return _PROJECTS[container]


def projects_run_by(pid: int) -> set[str]:
    """The compose projects the docker commands of process `pid` (and its descendants) name now."""
    projects = set()
    for command in _docker_commands(pid):
        if "compose" in command:
            projects.add(_project_named(command))
        elif command[1:2] == ["exec"] and (container := _exec_container(command)):
            projects.add(_project_of(container))
    return projects - {None}


def project_containers(projects: set[str], *, stopped_too: bool = False) -> set[str]:
    """The ids of the containers of these compose projects: running ones, or all."""
    found = set()
    for project in projects:
        listing = subprocess.run(
            ["docker", "ps", "-q", *(["-a"] if stopped_too else []),
             "--filter", f"label={PROJECT_LABEL}={project}"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        found |= set(listing.stdout.split())
    return found


class OwnProjects(threading.Thread):
    """In the background until `stop()`: the compose projects a process (this one by default)
    and its descendants name in their docker commands, gathered as they come and go."""

    def __init__(self, pid: int | None = None, every_seconds: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.every_seconds = pid or os.getpid(), every_seconds
        self.projects: set[str] = set()
        self.stopping = threading.Event()
        self.start()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.projects |= projects_run_by(self.pid)
            self.stopping.wait(self.every_seconds)

    def stop(self) -> set[str]:
        self.stopping.set()
        self.join()
        return self.projects


# Runs the docker commands (JSON, argv[1]) in a process of its own that is no descendant of the
# test's: a run's own projects are those its process tree names, and this is another run.
_DETACHED = (
    "import json, os, subprocess, sys\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    for command in json.loads(sys.argv[1]):\n"
    "        subprocess.run(command, check=True, capture_output=True)\n"
)


class AnotherRunsPool(threading.Thread):
    """A container labelled as another run's pool container (as another developer's tests, or CI,
    start beside this run), started `after_seconds` into the test, with a process of a program's
    uid in it: what a test of this run must neither count nor touch. `untouched()` says whether
    it still runs, with the processes it had."""

    def __init__(self, image: str, program_uid: int, after_seconds: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.project = f"heval-pool-other{uuid.uuid4().hex[:8]}"
        self.container = f"{self.project}-default-1"
        self.image, self.program_uid, self.after_seconds = image, program_uid, after_seconds
        self.processes: list[str] = []
        self.start()

    def run(self) -> None:
        threading.Event().wait(self.after_seconds)
        # It lives until the fixture removes it, however long the test runs (gVisor's hostile
        # cases take minutes on a busy machine).
        # As a pool's: a main process that waits, an executor that `docker exec` started as
        # root (`python3 -I -c`), and a child of it as a program's uid.
        executor = (
            "import os, time\nif os.fork() == 0:\n"
            "    os.setresgid(65534, 65534, 65534)\n"
            f"    os.setresuid({self.program_uid}, {self.program_uid}, {self.program_uid})\n"
            "time.sleep(10**6)\n"
        )
        commands = [
            ["docker", "run", "-d", "--network", "none", "--user", "0:0", "--name", self.container,
             "--label", f"{PROJECT_LABEL}={self.project}",
             "--label", "com.docker.compose.service=default",
             "--entrypoint", "python3", self.image, "-c", "import time; time.sleep(10**6)"],
            ["docker", "exec", "-d", "--user", "0:0", self.container,
             "python3", "-I", "-c", executor],
        ]  # fmt: skip
        subprocess.run([sys.executable, "-c", _DETACHED, json.dumps(commands)], check=True)
        # Its main process, the executor and its child, once the child has forked.
        deadline = time.monotonic() + 30
        while len(self.processes) < 3 and time.monotonic() < deadline:
            self.processes = self._processes()
            time.sleep(0.1)

    def _processes(self) -> list[str]:
        top = subprocess.run(
            ["docker", "top", self.container, "-eo", "pid,uid"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return sorted(top.stdout.splitlines()[1:]) if top.returncode == 0 else []

    def untouched(self) -> bool:
        self.join()
        assert len(self.processes) == 3, f"{self.container} did not start: {self.processes}"
        return self._processes() == self.processes

    def remove(self) -> None:
        self.join()
        subprocess.run(["docker", "rm", "-f", self.container], capture_output=True, check=False)
