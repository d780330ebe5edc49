"""Where programs run: the hardened compose file, the in-container executor and its limits."""

from pathlib import Path

SANDBOX_DIR = Path(__file__).parent
COMPOSE_FILE = SANDBOX_DIR / "compose.yaml"
EXECUTOR_SOURCE = (SANDBOX_DIR / "executor.py").read_text()

# The reference harness gives each program 3 s of wall-clock time. Here the 3 s are the program's
# own time: wall-clock time less the time it waited for a CPU (executor.py), the same on an idle
# machine, and not shortened by a busy one. The plain wall-clock backstop only guards against a
# kernel that does not report run delays, so it is generous.
DEFAULT_TIMEOUT = 3.0
WALL_CLOCK_FACTOR = 10
MEMORY_BYTES = 1 << 30
FILE_BYTES = 16 << 20
# Time for the executor itself (interpreter start, cleanup) beyond the program's wall clock.
EXECUTOR_GRACE_SECONDS = 30
# Who the executor and every program run as in the container ("nobody"; the image has no other).
PROGRAM_USER = "65534:65534"


class SandboxFailure(RuntimeError):
    """The sandbox could not run the program: an infrastructure error, never a model's fault."""
