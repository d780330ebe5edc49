"""Where programs run: the hardened compose file, the in-container executor and its limits."""

import os
from pathlib import Path
from typing import Any

import yaml

from .bundle import executor_source

SANDBOX_DIR = Path(__file__).parent
COMPOSE_FILE = SANDBOX_DIR / "compose.yaml"
# gVisor's: compose.yaml's sandbox under runsc, with what the executor needs there (its header).
RUNSC_COMPOSE_FILE = SANDBOX_DIR / "compose.runsc.yaml"
RUNTIME_VARIABLE = "HEVAL_SANDBOX_RUNTIME"
SECCOMP_FILE = SANDBOX_DIR / "seccomp.json"  # the compose file names it
# The executor package (sandbox/executor/), as the `python3 -I -c` source sent with each command.
EXECUTOR_SOURCE = executor_source()

# The reference harness gives each program 3 s of wall-clock time. Here the 3 s are the program's
# own time: wall-clock time less the time it waited for a CPU (executor/clock.py), the same on an
# idle machine, and not shortened by a busy one. The plain wall-clock backstop only guards against
# a kernel that does not report run delays, so it is generous.
DEFAULT_TIMEOUT = 3.0
WALL_CLOCK_FACTOR = 10
# The memory a program's processes may hold together, in MiB: the reference harness sets none,
# so a program that needs more fails here only (a deliberate deviation: docs/sandbox.md). It is
# at most what the container (1,792 MiB in compose.yaml) leaves to programs once the executor's
# out-of-memory decoy holds its 256 MiB.
DEFAULT_MEMORY_MIB = 1024
CONTAINER_MEMORY_MIB = 1536
FILE_BYTES = 16 << 20
# The tasks (processes and threads) all of a container's programs may have at once (the kernel's
# count of their uid, which is the container's own). With compose.yaml's open files per process,
# it bounds what a container's programs hold of the machine's file table, under any runtime: the
# container's own pids limit is larger, since gVisor's own threads count there.
PROGRAM_TASKS = 64
# Processes of the container's own besides its programs' (init, its main process, the executor,
# its decoy and warden, and the short-lived ones the executor starts): at most this many.
CONTAINER_OWN_TASKS = 8
# Time for the executor itself (interpreter start, reaping, cleanup: a few seconds at most) beyond
# the program's wall clock. An executor that has not answered by then is lost, and its container
# is replaced.
EXECUTOR_GRACE_SECONDS = 10
# Who the executor runs as in the container: root, with the few capabilities the compose file
# grants, so that it can police the programs, which it runs as a user of the container's own
# (executor/places.py).
EXECUTOR_USER = "0:0"


def sandbox_compose_file() -> Path:
    """The compose file of the sandbox's containers, the pool's and Inspect's docker sandbox's,
    under the runtime that HEVAL_SANDBOX_RUNTIME names (runc when unset)."""
    return RUNSC_COMPOSE_FILE if os.environ.get(RUNTIME_VARIABLE) == "runsc" else COMPOSE_FILE


def compose_service(compose_file: str | Path = COMPOSE_FILE) -> dict[str, Any]:
    """The sandbox's service in a compose file, as written there; a service that extends
    another has that one's settings, each replaced by its own where it has one."""
    path = Path(compose_file)
    service = yaml.safe_load(path.read_text())["services"]["default"]
    if "extends" not in service:
        return service
    base = compose_service(path.parent / service["extends"]["file"])
    return base | {key: value for key, value in service.items() if key != "extends"}


class SandboxFailure(RuntimeError):
    """The sandbox could not run the program: an infrastructure error, never a model's fault."""
