"""Running a program in the task's sandbox: the compose file and the executor call."""

import json
from dataclasses import dataclass
from pathlib import Path

from inspect_ai.util import sandbox

SANDBOX_DIR = Path(__file__).parent
COMPOSE_FILE = SANDBOX_DIR / "compose.yaml"
EXECUTOR_SOURCE = (SANDBOX_DIR / "executor.py").read_text()

# The reference harness gives each program 3 s of wall-clock time. Here the 3 s are CPU time, so a
# busy machine cannot turn a pass into a timeout; the wall-clock backstop (3x) still ends programs
# that sleep or block, such as the reference example's `time.sleep(10)`.
DEFAULT_TIMEOUT = 3.0
WALL_CLOCK_FACTOR = 3
MEMORY_BYTES = 1 << 30
FILE_BYTES = 16 << 20
# Time for the executor itself (interpreter start, cleanup) beyond the program's wall clock.
EXECUTOR_GRACE_SECONDS = 30


class SandboxFailure(RuntimeError):
    """The sandbox could not run the program: an infrastructure error, never a model's fault."""


@dataclass(frozen=True)
class Execution:
    status: str  # "passed", "failed" or "timed out"
    reason: str
    returncode: int
    cpu_seconds: float
    wall_seconds: float
    stdout_bytes: int
    stderr_tail: str

    @property
    def verdict(self) -> str:
        """The reference harness's result string: "passed", "failed: ..." or "timed out"."""
        return "failed: " + self.reason if self.status == "failed" else self.status


async def execute(program: str, timeout: float = DEFAULT_TIMEOUT) -> Execution:
    """Run one program in the current sample's sandbox and return the executor's verdict."""
    wall_seconds = timeout * WALL_CLOCK_FACTOR
    request = {
        "program": program,
        "cpu_seconds": timeout,
        "wall_seconds": wall_seconds,
        "memory_bytes": MEMORY_BYTES,
        "file_bytes": FILE_BYTES,
    }
    result = await sandbox().exec(
        ["python3", "-I", "-c", EXECUTOR_SOURCE],
        input=json.dumps(request),
        timeout=int(wall_seconds + EXECUTOR_GRACE_SECONDS),
    )
    try:
        return Execution(**json.loads(result.stdout))
    except (json.JSONDecodeError, TypeError) as error:
        raise SandboxFailure(
            f"The sandbox's executor did not report a verdict (exit code {result.returncode}). "
            f"stdout: {result.stdout[-1000:]!r} stderr: {result.stderr[-2000:]!r}"
        ) from error
