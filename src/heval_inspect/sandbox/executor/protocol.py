"""What crosses the container's boundary, and what the executor's modules may ask of the place
where programs run.

A request is one JSON object, a `Request`; its answer one JSON line, an `Answer`, whose `cause`
is one of Cause's values. The host builds its requests as a `Request`
(heval_inspect.sandbox.execution), which mypy checks against this module, and reads each answer
into heval_inspect.schema.Execution, whose fields a test holds to `Answer`'s. `Place` is what
the program's clock, the warden and the run may use of a container or of this machine
(places.py): nothing else of it.
"""

from typing import Protocol, TypedDict


class Cause:
    """How a program ended: heval_inspect.schema.Cause's values (the executor imports nothing
    of heval_inspect; a test holds the two together)."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong answer"
    SYNTAX_ERROR = "syntax error"
    NAME_ERROR = "name error"
    EXCEPTION = "exception"
    MEMORY = "memory"
    TIME_LIMIT = "time limit"
    SIGNAL = "signal"
    EXIT = "exit"
    EXECUTOR_LOST = "executor lost"  # judged outside the container: the executor is gone


# The cause of a failure, by the class name of the exception that ended the program.
CAUSE_OF_ERROR = {
    "AssertionError": Cause.WRONG_ANSWER,
    "SyntaxError": Cause.SYNTAX_ERROR,
    "IndentationError": Cause.SYNTAX_ERROR,
    "TabError": Cause.SYNTAX_ERROR,
    "NameError": Cause.NAME_ERROR,
    "UnboundLocalError": Cause.NAME_ERROR,
    "MemoryError": Cause.MEMORY,
}


class Request(TypedDict):
    """What the host asks for (one JSON object): a program and its limits. The executor's own
    additions (RunRequest, WardenRequest) never cross to the host."""

    program: str  # the whole program: prompt, completion and tests
    seconds: float  # its time limit (its own time: OwnTime), then TimeoutException
    wall_seconds: float  # the wall-clock backstop (and gVisor's CPU-time safety net)
    memory_bytes: int  # the memory its processes may hold together (Run.memory_held)
    file_bytes: int  # RLIMIT_FSIZE
    tasks: int  # RLIMIT_NPROC: the tasks of all of the container's programs together


class RunRequest(Request):
    """A request as the executor runs it (Run): with where its program's scratch folder and
    report FIFO are."""

    scratch: str
    report: str


class Helpers(TypedDict):
    """The pids of the executor's helpers that the warden is told of with each program (0:
    none): the decoy, whose end it watches, and the killer; both are the container's own."""

    decoy: int
    killer: int


class WardenRequest(RunRequest, Helpers):
    """What the executor sends its warden for each program (Warden.run): the request as run,
    the helpers' pids, and the nonce with which the program's harness reports a pass."""

    nonce: str


class Answer(TypedDict):
    """The verdict on one program (one JSON line; see the module's docstring), which
    heval_inspect.schema.Execution.from_answer reads (a test holds the two together)."""

    status: str  # "passed", "failed" or "timed out"
    cause: str  # one of Cause's values
    reason: str
    error: str
    returncode: int
    cpu_seconds: float
    wall_seconds: float
    stdout_bytes: int
    stderr_tail: str
    residue: dict[str, int]


class Place(Protocol):
    """What the program's process, the warden, the clock and the run use of the place where
    programs run (places.py: InContainer, or OnThisMachine for `-T sandbox=local`)."""

    run_delays: bool  # the kernel reports tasks' run delays (not gVisor's)
    cpu_counts_waits: bool  # the CPU time read counts waits for a CPU (gVisor's own counts)
    reading_seconds: float  # how often the program's time and memory are read
    reap_seconds: float  # how long the warden may take to end and reap a program
    machine_cpus: int
    killer_handles: list[int]  # in the warden: the killer's pipe ends, as the request came
    killer_spent: bool  # in the warden: it woke the killer for this program
    killer_used: bool  # in the executor: the killer was used, and is to be replaced

    def settle(self) -> None: ...
    def helpers(self) -> tuple[Helpers, list[int]]: ...
    def become_program(self, scratch: str) -> None: ...
    def end_programs(self, main: int, own: set[int] | None = None) -> None: ...
    def cpu_seconds(self, main: int | None) -> float: ...
    def machine_seconds(self) -> float | None: ...
    def sleeps_on_a_timer(self, main: int) -> bool: ...
    def memory_held(self, main: int) -> float: ...
    def program_tasks(self, main: int) -> list[str]: ...
    def out_of_memory_watch(self) -> list[int]: ...
    def out_of_memory(self) -> bool: ...
    def oom_kills(self) -> float: ...
    def clean(self, paths: list[str]) -> None: ...
    def residue(self, scratch: str) -> dict[str, int]: ...
