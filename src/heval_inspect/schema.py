"""What crosses modules, in one place: the names a log of ours is read by, a sample's metadata,
the executor's verdict on a program (its structured cause included), a shard's record, and a
log's eval metadata (its task version and provenance, data files included).

Nothing here imports the rest of the package: every module that writes or reads these may
import it. The executor (`sandbox/executor/`) is shipped into the container as source and
imports nothing of ours, so it spells the causes out again; a test holds the two lists together.
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:  # for the annotations only: reading the names here needs no log module
    from inspect_ai.log import EvalLog
    from inspect_ai.scorer import Value

SCORER = "unit_tests"  # the scorer's name: its scores are `sample.scores[SCORER]`
TASK_PREFIX = "heval_inspect/"  # a log's task registry name starts with it when the task is ours
# The eval metadata that names the `heval-inspect parallel` command a shard's log came from.
RUN_KEY = "heval_run"
# The eval metadata that says which shard of a run a log ran (ShardRecord).
SHARD_KEY = "shard"
# Where a solver leaves the code for the gap (the sample's store), for the scorer to insert as is.
MIDDLE = "heval_inspect:middle"

# The keys of the score's value: whether the program passed, and whether the model's code was
# the canonical gap's (as it is, and stripped of surrounding white space); each 0.0 or 1.0.
PASSED = "passed"
EXACT_MATCH, EXACT_MATCH_STRIPPED = "exact_match", "exact_match_stripped"
MEAN_FIGURES = (EXACT_MATCH, EXACT_MATCH_STRIPPED)  # averaged over epochs as they are


def figures_of(value: "Value") -> Mapping[str, Any]:
    """The figures of a score of ours by their keys (PASSED, MEAN_FIGURES); TypeError for a
    value that is not a mapping (not a score of ours)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"a score of {SCORER} is a mapping of its figures, not {value!r}")
    return value


def is_ours(task_registry_name: str | None) -> TypeGuard[str]:
    """Whether a log (by its task's registry name) is of one of this package's tasks (if so,
    the name is a string)."""
    return (task_registry_name or "").startswith(TASK_PREFIX)


ORIGINAL = "original"  # the tasks as they are published (`-T variant`, variants/)


@dataclass(frozen=True)
class VariantId:
    """Which variant of the tasks (`-T variant`, variants/) a sample or a run was made from,
    and the version of the generator that built it: the same name from different versions is
    different problems. The original's metadata says nothing of it (logs as before variants)."""

    name: str = ORIGINAL
    version: int | None = None  # None for the original

    @property
    def tag(self) -> str:
        """How a sample's source names it: "renamed-2"; "" for the original."""
        return "" if self.name == ORIGINAL else f"{self.name}-{self.version}"

    def metadata(self) -> dict[str, Any]:
        if self.name == ORIGINAL:
            return {}
        return {"variant": self.name, "variant_version": self.version}

    @classmethod
    def read(cls, metadata: Mapping[str, Any] | None) -> "VariantId":
        metadata = metadata or {}
        name = str(metadata.get("variant") or ORIGINAL)
        version = metadata.get("variant_version")
        return cls(name, None if name == ORIGINAL or version is None else int(version))


ORIGINAL_VARIANT = VariantId()


@dataclass(frozen=True)
class SampleMetadata:
    """What a sample of ours carries in its metadata: its subset, the HumanEval problem it was
    cut from (what shards keep together and the standard errors are clustered by), and the
    problem file it came from, where the solvers and the scorer find its texts
    (`data.ProblemFile.source`: the file's name and the start of its SHA-256)."""

    subset: str
    problem_id: str
    source: str
    variant: VariantId = ORIGINAL_VARIANT

    def metadata(self) -> dict[str, Any]:
        return {
            "subset": self.subset,
            "problem_id": self.problem_id,
            "source": self.source,
            **self.variant.metadata(),
        }

    @classmethod
    def read(cls, metadata: Mapping[str, Any] | None, sample_id: object) -> "SampleMetadata":
        """From a sample's metadata. A sample of another dataset (or of a log older than these
        fields) reads as subset "all", its own problem, and no source ("")."""
        metadata = metadata or {}
        return cls(
            subset=str(metadata.get("subset", "all")),
            problem_id=str(metadata.get("problem_id", sample_id)),
            source=str(metadata.get("source") or ""),
            variant=VariantId.read(metadata),
        )


def completion_file_of(log: "EvalLog") -> str | None:
    """The completion file a log replayed: the task's `samples` or the replay solver's."""
    if log.eval.task_args.get("samples"):
        return log.eval.task_args["samples"]
    for step in log.plan.steps:
        if step.solver.endswith("replay") and "samples" in step.params:
            return step.params["samples"]
    return None


class Cause(StrEnum):
    """How a program ended, as its executor judged it. The verdict (the reference harness's
    words) depends on it: "passed" for PASSED, "failed: <message>" for an exception the program
    raised (WRONG_ANSWER ... EXCEPTION, and MEMORY from a MemoryError), "timed out" for the rest:
    the time limit, or an end without a report, which the reference reports as timed out."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong answer"  # an AssertionError: a test's assertion failed
    SYNTAX_ERROR = "syntax error"  # SyntaxError, IndentationError, TabError: it does not compile
    NAME_ERROR = "name error"  # NameError, UnboundLocalError
    EXCEPTION = "exception"  # any other exception; `error` names its class
    MEMORY = "memory"  # a MemoryError, or killed by the container's out-of-memory killer
    TIME_LIMIT = "time limit"  # still running at its time limit
    SIGNAL = "signal"  # killed by another signal before it reported
    EXIT = "exit"  # exited before its tests completed, without an exception
    EXECUTOR_LOST = "executor lost"  # its executor ended (twice) before it reported


@dataclass(frozen=True)
class Execution:
    """The executor's verdict on one program."""

    status: str  # "passed", "failed" or "timed out"
    cause: Cause
    reason: str  # the exception's message, or what ended the program, in words
    returncode: int
    cpu_seconds: float
    wall_seconds: float
    stdout_bytes: int
    stderr_tail: str
    # What the program left that the executor could not remove (processes, files, IPC objects,
    # memory); the pool replaced the container. Empty: the container was checked clean.
    residue: dict[str, int]
    # Pool containers replaced on this program's account (its residue, or a lost executor).
    containers_replaced: int = 0
    # The class name of the exception that ended the program ("AssertionError", ...); "" when
    # none did (it passed, timed out or died without reporting).
    error: str = ""

    @classmethod
    def from_answer(cls, answer: Mapping[str, Any]) -> "Execution":
        """From the executor's JSON answer (its `Answer`, whose keys and types a test holds to
        these fields); a cause outside Cause raises ValueError."""
        return cls(**{**answer, "cause": Cause(answer["cause"])})

    @property
    def verdict(self) -> str:
        """The reference harness's result string: "passed", "failed: ..." or "timed out"."""
        return "failed: " + self.reason if self.status == "failed" else self.status

    def score_metadata(self) -> dict[str, Any]:
        """What the score's metadata keeps of it (`cause_of` reads it back)."""
        return {
            "verdict": self.verdict,
            "cause": self.cause.value,
            "reason": self.reason,
            "error": self.error,
            "cpu_seconds": self.cpu_seconds,
            "wall_seconds": self.wall_seconds,
            # Only when the program left something the executor could not remove, or its
            # container had to be replaced.
            **({"residue": self.residue} if self.residue else {}),
            **(
                {"containers_replaced": self.containers_replaced}
                if self.containers_replaced
                else {}
            ),
        }


def executor_lost() -> Execution:
    """A program whose executor ended before it reported: the reference's "timed out"."""
    return Execution(
        status="timed out",
        cause=Cause.EXECUTOR_LOST,
        reason="the sandbox's executor ended before the program reported a result",
        returncode=-9,
        cpu_seconds=0.0,
        wall_seconds=0.0,
        stdout_bytes=0,
        stderr_tail="",
        residue={},
    )


def verdict_of(score_metadata: Mapping[str, Any] | None) -> str | None:
    """A score's verdict in the reference's words ("passed", "failed: ...", "timed out"), from
    its metadata (`Execution.score_metadata`); None when it has none (another scorer's)."""
    verdict = (score_metadata or {}).get("verdict")
    return verdict if isinstance(verdict, str) else None


def cause_of(score_metadata: dict[str, Any]) -> Cause | None:
    """A score's cause, from its metadata; None when it has none (a log scored by another
    scorer, or by a development version of ours that did not record it)."""
    cause = score_metadata.get("cause")
    try:
        return Cause(cause) if isinstance(cause, str) else None
    except ValueError:
        return None


@dataclass(frozen=True)
class ShardRecord:
    """Which shard a log ran (its eval metadata's `shard`), for merging shards into one run."""

    index: int  # 1 ... count
    count: int
    tasks: int  # this shard's
    problems: list[str]  # this shard's HumanEval problems
    all_tasks: int  # the whole task's
    all_problems: int
    numbering: str = "1-based"

    def metadata(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> "ShardRecord | None":
        return cls(**metadata) if metadata else None


@dataclass(frozen=True)
class DataFile:
    """A file a run read, as its provenance records it (`provenance.data_files`)."""

    role: str  # "problems" or "completions"
    path: str  # as it was on the machine that ran
    sha256: str

    def metadata(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> "DataFile":
        return cls(
            role=str(metadata.get("role", "")),
            path=str(metadata.get("path", "")),
            sha256=str(metadata["sha256"]),
        )


@dataclass(frozen=True)
class Provenance:
    """How a log's verdicts were made (its eval metadata's `provenance`; provenance.py writes
    it): the package, the data files, the sandbox, the limits and the prompt. The sandbox's and
    the limits' records are sandbox/provenance.py's, kept as the log holds them: reading a
    header's metadata keeps the very dicts, so that the hook that learns the image ids fills
    them into the header in place."""

    package: dict[str, str]
    data_files: list[DataFile]
    sandbox: dict[str, Any]
    limits: dict[str, Any]
    prompt: dict[str, Any]

    @property
    def problem_files(self) -> list[DataFile]:
        return [file for file in self.data_files if file.role == "problems"]

    @property
    def completion_files(self) -> list[DataFile]:
        return [file for file in self.data_files if file.role == "completions"]

    @property
    def timeout_seconds(self) -> float | None:
        return self.limits.get("timeout_seconds")

    @property
    def memory_bytes(self) -> int | None:
        return self.limits.get("memory_bytes")

    def metadata(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "data_files": [file.metadata() for file in self.data_files],
            "sandbox": self.sandbox,
            "limits": self.limits,
            "prompt": self.prompt,
        }

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> "Provenance":
        """From a log's record; a part missing (a log older than it) reads as empty."""
        return cls(
            package=metadata.get("package", {}),
            data_files=[DataFile.from_metadata(each) for each in metadata.get("data_files", [])],
            sandbox=metadata.get("sandbox", {}),
            limits=metadata.get("limits", {}),
            prompt=metadata.get("prompt", {}),
        )


@dataclass(frozen=True)
class EvalMetadata:
    """What the eval metadata of a log of ours holds, as the package writes and reads it.

    The task writes the version and the provenance (provenance.py) and a shard its record
    (shard.py); the run's command adds the run key (`heval-inspect parallel` and `score`) and
    the user a `label` (--metadata). A log older than any of these reads it as None (empty
    provenance), as a log of another task does.
    """

    full_task_version: str | None = None  # "N-X"
    task_comparability_version: int | None = None  # N
    task_interface_version: str | None = None  # X
    provenance: Provenance = field(default_factory=lambda: Provenance.from_metadata({}))
    shard: "ShardRecord | None" = None
    label: str | None = None  # what the report names the run
    run_key: str | None = None  # RUN_KEY: the command the log came from
    variant: VariantId = ORIGINAL_VARIANT  # the tasks' variant (`-T variant`)

    def task_metadata(self) -> dict[str, Any]:
        """What a task records (the version, the provenance, and a variant other than the
        original), in the log's order."""
        return {
            "full_task_version": self.full_task_version,
            "task_comparability_version": self.task_comparability_version,
            "task_interface_version": self.task_interface_version,
            "provenance": self.provenance.metadata(),
            **self.variant.metadata(),
        }

    @classmethod
    def read(cls, metadata: Mapping[str, Any] | None) -> "EvalMetadata":
        metadata = metadata or {}
        comparability = metadata.get("task_comparability_version")
        label = metadata.get("label")
        run_key = metadata.get(RUN_KEY)
        return cls(
            full_task_version=metadata.get("full_task_version"),
            task_comparability_version=None if comparability is None else int(comparability),
            task_interface_version=metadata.get("task_interface_version"),
            provenance=Provenance.from_metadata(metadata.get("provenance", {})),
            shard=ShardRecord.from_metadata(metadata.get(SHARD_KEY)),
            label=str(label) if label else None,
            run_key=str(run_key) if run_key else None,
            variant=VariantId.read(metadata),
        )
