"""No verdict depends on how busy the machine is (docs/sandbox.md, *Timeouts*).

Under a CPU load of three times the machine's cores (hogs in containers of their own), correct
programs that spend their time computing, writing output (through `print`, and straight to file
descriptor 2, which the executor drains), moving data through a pipe between two of their
processes or items between two threads, and waiting for their own threads and child processes
all pass, as they do on a quiet machine and under the reference on an idle one; programs that
are wrong by time (a loop, a sleep, five seconds of CPU) still time out. Each correct program
needs up to about a second of CPU on an idle machine under runc, up to two under gVisor
(measured; its system calls cost more), so that what is tested is the load and not the limit.
The test checks that the load was real (the machine's CPUs were busy at least 90% of the time
while the programs ran) and, under runc, that it held programs back (the loop, to half as long
again as its limit in wall-clock time), as it holds back the reference's wall-clock limit. In
both sandboxes, under runc and runsc.
"""

import json
import os
import subprocess

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, load_official
from heval_inspect.sandbox import COMPOSE_FILE, compose_service
from heval_inspect.sandbox.pool import BUILD_PROJECT
from heval_inspect.tasks import humaneval

pytestmark = pytest.mark.docker

TIMEOUT = 3.0
# Three hogs per core; more to see how far it holds (HEVAL_TEST_LOAD_PER_CORE=5).
LOAD_PER_CORE = int(os.environ.get("HEVAL_TEST_LOAD_PER_CORE", "3"))
CORES = os.cpu_count() or 1
# Half a second to a second of one core's work on this project's machines.
SECOND = "sum(i * i for i in range(12_000_000))"

CORRECT = {
    "a second of CPU": f"x = {SECOND}\n",
    "100 MB through print": "for _ in range(1_000_000):\n    print('x' * 99)\n",
    "500 MB straight to stderr": (
        "import posix\nchunk = b'y' * 65536\nfor _ in range(8000):\n    posix.write(2, chunk)\n"
    ),
    # A gigabyte: 2 GB took 3.2 s on an idle machine under gVisor (whose ptrace platform makes
    # each of the pipe's system calls dear), past the limit by the runtime's cost alone.
    "a gigabyte through a pipe between its processes": (
        "import posix\nr, w = posix.pipe()\nchild = posix.fork()\nif child == 0:\n"
        "    posix.close(r)\n    chunk = b'z' * 65536\n    for _ in range(16000):\n"
        "        posix.write(w, chunk)\n    posix._exit(0)\nposix.close(w)\nreceived = 0\n"
        "while data := posix.read(r, 1 << 16):\n    received += len(data)\n"
        "posix.waitpid(child, 0)\nassert received == 16000 * 65536, received\n"
    ),
    # Under gVisor a woken task shows asleep until it runs: two processes or threads that hand
    # work to each other are both found asleep while one waits for the host's CPU.
    "two threads handing 2,000 items to each other through queues": (
        "import queue, threading\nto_echo, back = queue.Queue(1), queue.Queue(1)\n"
        "def echo():\n    while (item := to_echo.get()) is not None:\n        back.put(item)\n"
        "thread = threading.Thread(target=echo)\nthread.start()\nfor i in range(2000):\n"
        "    to_echo.put(i)\n    assert back.get() == i\nto_echo.put(None)\nthread.join()\n"
    ),
    "four threads that compute, joined": (
        "import threading\n"
        "threads = [threading.Thread(target=lambda: sum(i * i for i in range(3_000_000)))\n"
        "           for _ in range(4)]\n"
        "for thread in threads:\n    thread.start()\nfor thread in threads:\n    thread.join()\n"
    ),
    "a child process that computes, waited for": (
        f"import posix\nchild = posix.fork()\nif child == 0:\n    {SECOND}\n    posix._exit(0)\n"
        "_, status = posix.waitpid(child, 0)\nassert status == 0\n"
    ),
}
WRONG_BY_TIME = {
    "a loop": "while True:\n    pass\n",
    "a sleep": "import time\ntime.sleep(10)\n",
    "five seconds of CPU": f"for _ in range(8):\n    {SECOND}\n",
    # The executor drains what a program writes to its stderr: that work, and the flooding
    # thread's waits behind it, are not the machine's (tests/test_reference_world.py has more).
    "a sleep while a thread floods stderr": (
        "import os, threading, time\nchunk = b'e' * (1 << 20)\n"
        "def flood():\n    while True:\n        os.write(2, chunk)\n"
        "threading.Thread(target=flood, daemon=True).start()\ntime.sleep(6)\n"
    ),
    "a sleep while a child process floods stderr": (
        "import posix, time\nif posix.fork() == 0:\n    chunk = b'c' * 65536\n"
        "    while True:\n        posix.write(2, chunk)\ntime.sleep(6)\n"
    ),
}


def write_files(tmp_path) -> tuple[str, str]:
    problem = load_official(HUMANEVAL)[0]
    rows = {
        **{f"correct/{name}": code for name, code in CORRECT.items()},
        **{f"wrong by time/{name}": code for name, code in WRONG_BY_TIME.items()},
    }
    problem_file, samples_file = tmp_path / "problems.jsonl", tmp_path / "samples.jsonl"
    problem_file.write_text(
        "".join(json.dumps(problem | {"task_id": task_id}) + "\n" for task_id in rows)
    )
    # The canonical answer, then the module-level code that follows it.
    samples_file.write_text(
        "".join(
            json.dumps({"task_id": task_id, "completion": problem["canonical_solution"] + code})
            + "\n"
            for task_id, code in rows.items()
        )
    )
    return str(problem_file), str(samples_file)


class Hogs:
    """CPU hogs, each the main process of a container of its own."""

    def __init__(self, containers: list[str]) -> None:
        self.containers = containers

    def machine_ticks(self) -> tuple[int, int]:
        """The CPU time of the machine that runs the containers (Docker's: the host, or the
        virtual machine of a Docker Desktop) so far, in ticks: busy, and in all. Read from
        /proc/stat in a hog's container, which shows the kernel's counters for every CPU."""
        stat = subprocess.run(
            ["docker", "exec", self.containers[0], "cat", "/proc/stat"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        ticks = [int(each) for each in stat.splitlines()[0].split()[1:]]
        idle = ticks[3] + ticks[4]  # idle, iowait
        total = sum(ticks[:8])  # user ... steal (guest time is counted in user already)
        return total - idle, total


@pytest.fixture
def busy_machine():
    """CPU hogs, LOAD_PER_CORE for each core, for the test's length: each in a container of its
    own (as other containers' work on the same host), so that they share the CPUs with the
    sandbox's containers wherever the test process itself stands among the host's cgroups."""
    subprocess.run(
        ["docker", "compose", "-p", BUILD_PROJECT, "-f", str(COMPOSE_FILE), "build"],
        check=True,
        capture_output=True,
    )
    image = compose_service()["image"]
    hogs: list[str] = []
    try:
        for _ in range(LOAD_PER_CORE * CORES):
            started = subprocess.run(
                ["docker", "run", "-d", "--rm", "--network", "none", "--entrypoint", "python3",
                 image, "-c", "while True:\n    pass"],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            hogs.append(started.stdout.strip())
        yield Hogs(hogs)
    finally:
        if hogs:
            subprocess.run(["docker", "rm", "-f", *hogs], capture_output=True, check=False)


@pytest.mark.parametrize("sandbox", ["pool", "docker"])
def test_no_verdict_depends_on_machine_load(sandbox, runtime, busy_machine, tmp_path):
    problem_file, samples_file = write_files(tmp_path)
    busy_before, total_before = busy_machine.machine_ticks()
    [log] = inspect_eval(
        humaneval(
            problem_file=problem_file, samples=samples_file, sandbox=sandbox, timeout=TIMEOUT
        ),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    # How busy the machine was while the programs ran: its CPUs' busy share of their time.
    busy_after, total_after = busy_machine.machine_ticks()
    busy = (busy_after - busy_before) / max(1, total_after - total_before)
    assert log.status == "success", log.error
    scores = {str(s.id): s.scores["unit_tests"].metadata for s in log.samples}
    # Said before any check, so that a failure shows every program's times.
    times = (
        f"{sandbox} {runtime}, {len(busy_machine.containers)} hogs, the machine's CPUs {busy:.0%} "
        "busy: verdict, wall seconds, main process's CPU seconds: "
        + "; ".join(
            f"{sample_id}: {score['verdict']}, {score['wall_seconds']}, {score['cpu_seconds']}"
            for sample_id, score in sorted(scores.items())
        )
    )
    print(times)
    verdicts = {sample_id: score["verdict"] for sample_id, score in scores.items()}
    expected = {
        **{f"correct/{name}": "passed" for name in CORRECT},
        **{f"wrong by time/{name}": "timed out" for name in WRONG_BY_TIME},
    }
    assert verdicts == expected, times
    # The load was real: the machine's CPUs were all but always busy while the programs ran (with
    # three hogs a core they are, whatever else runs beside them).
    assert busy >= 0.9, times
    # Under runc it held the programs back: the loop, stopped at TIMEOUT of its own time (on a
    # quiet machine about TIMEOUT of wall-clock time), to half as long again at least. Under
    # gVisor a container has threads of gVisor's own on every CPU, and the share of the CPUs it
    # gets under the same load is the host's scheduler's to give, from run to run: the loop
    # stops when its container's real CPU time reaches TIMEOUT (the executor's clock there,
    # which tests/test_isolation.py checks it finds), sometimes after little more wall-clock
    # time (docs/benchmarks.md, Load under gVisor).
    if runtime == "runc":
        loop = scores["wrong by time/a loop"]["wall_seconds"]
        assert loop >= 1.5 * TIMEOUT, times


# A program that sleeps past its limit while its own threads wait for one another in bursts on
# the container's CPU: those waits are its own, not the machine's, so on a quiet machine its sleep
# is charged and it times out, as in the reference.
SLEEP_WHILE_THREADS_BURST = (
    "import threading, time\n"
    "def burst():\n    while True:\n        start = time.monotonic()\n"
    "        while time.monotonic() - start < 0.002:\n            pass\n        time.sleep(0.05)\n"
    "for _ in range(12):\n    threading.Thread(target=burst, daemon=True).start()\n"
    "time.sleep(5)\n"
)


def test_a_sleep_is_charged_while_its_threads_wait_for_one_another(runtime, tmp_path):
    problem = load_official(HUMANEVAL)[0]
    problem_file, samples_file = tmp_path / "problems.jsonl", tmp_path / "samples.jsonl"
    problem_file.write_text(json.dumps(problem | {"task_id": "sleeps while bursting"}) + "\n")
    completion = problem["canonical_solution"] + SLEEP_WHILE_THREADS_BURST
    samples_file.write_text(
        json.dumps({"task_id": "sleeps while bursting", "completion": completion}) + "\n"
    )
    [log] = inspect_eval(
        humaneval(problem_file=str(problem_file), samples=str(samples_file), timeout=TIMEOUT),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    score = sample.scores["unit_tests"].metadata
    assert score["verdict"] == "timed out", score
