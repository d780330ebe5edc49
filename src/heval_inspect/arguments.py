"""The task arguments (`TaskArguments`, which every task's signature is built from), their parsed
settings (`TaskSettings`), and the checks of arguments that are plain values, before any sample
runs.

`inspect eval -T name=value` (and `inspect score -S`) reads each value as YAML: `3` is an int,
`2.5` a float, `true`/`false` a bool, `.nan` a float, anything else a string. Each check refuses a
value of the wrong type or range with one line saying what is accepted; the arguments that name
a choice (subsets, k, fim_format, sandbox, shard) are checked where they are parsed.
"""

import functools
import inspect
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Literal

from inspect_ai import Task
from inspect_ai.scorer import Scorer
from inspect_ai.solver import Solver

from . import prompts
from .data import SUBSETS
from .errors import TaskArgumentError, did_you_mean
from .metrics import PassAtK
from .prompts import FimFormat
from .sandbox import CONTAINER_MEMORY_MIB, DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT
from .schema import ORIGINAL, VariantId
from .shard import Shard, parse_limit, parse_sample_ids, parse_shard
from .variants import check_variant

# Above an hour a program is not a unit test any more; a typo (timeout=3000) should not turn a
# hanging program into an hour-long sample unnoticed.
MAX_TIMEOUT = 3600.0
# Below this, Python itself cannot start in the sandbox.
MIN_MEMORY_MIB = 64


def check_timeout(timeout: Any) -> None:
    if not _is_number(timeout) or not 0 < timeout <= MAX_TIMEOUT:
        raise TaskArgumentError(
            f"timeout={timeout!r}: give the seconds each program may run, a number above 0 and "
            f"at most {MAX_TIMEOUT:g} (e.g. -T timeout=10); the default is {DEFAULT_TIMEOUT:g}."
        )


def check_memory_limit(memory_limit: Any) -> None:
    if (
        not isinstance(memory_limit, int)
        or isinstance(memory_limit, bool)
        or not MIN_MEMORY_MIB <= memory_limit <= CONTAINER_MEMORY_MIB
    ):
        raise TaskArgumentError(
            f"memory_limit={memory_limit!r}: give whole MiB from {MIN_MEMORY_MIB} (the "
            f"interpreter's own needs) to {CONTAINER_MEMORY_MIB} (what the sandbox container "
            f"leaves to programs), e.g. -T memory_limit=512; the default is {DEFAULT_MEMORY_MIB}."
        )


def check_flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TaskArgumentError(f"{name}={value!r}: give true or false (e.g. -T {name}=true).")


def check_path(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise TaskArgumentError(f"{name}={value!r}: give the path of a file or folder.")


def check_name(name: str, value: Any, choices: str) -> None:
    if not isinstance(value, str):
        raise TaskArgumentError(f"{name}={value!r}: give one of {choices}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# "pool": a few long-lived hardened containers (fast; see sandbox/pool.py); "docker": Inspect's
# own sandbox, one compose project per sample. Both use the same compose file. "local": no
# container at all, only for those who cannot run Docker and trust the code (warned).
SandboxName = Literal["pool", "docker", "local"]
SANDBOX_TYPES = {"pool": "heval_pool", "docker": "docker", "local": "local"}


def parse_subsets(subsets: str | list[str]) -> list[str]:
    names = list(SUBSETS) if subsets == "all" else subsets
    if isinstance(names, str):
        names = [name.strip() for name in names.split(",")]
    if not isinstance(names, list):
        names = [names]
    unknown = [name for name in names if name not in SUBSETS]
    if unknown or not names:
        hint = did_you_mean(unknown[0], SUBSETS) if unknown else ""
        raise TaskArgumentError(
            f"Unknown infilling subset(s) {unknown or names}{hint}: choose from "
            f"{', '.join(SUBSETS)}, "
            f"or 'all' (e.g. -T subsets=single_line,multi_line)."
        )
    return names


@dataclass(frozen=True, kw_only=True)
class TaskArguments:
    """The arguments every task takes (`-T name=value`); each task's signature is built from
    these fields (see `takes_task_arguments`), so they are written here once.

    Args:
        data_dir: A local folder with the official files (default: $HEVAL_DATA_DIR, else the
            pinned, checksum-verified download).
        problem_file: Score any problem file in the reference's format instead (JSON lines with
            task_id, prompt, suffix (none in HumanEval's), canonical_solution, test,
            entry_point); humaneval_infilling then ignores `subsets`.
        samples: Score completions made elsewhere (the reference's format, JSON lines of
            task_id and completion) instead of asking a model: sets the solver to replay and the
            epochs to the completions per task, after checking the file against the problems.
        partial: With `samples`, score only the tasks the file has completions for.
        k: The k of pass@k, one or several ("1,10"); each needs at least k epochs (--epochs).
        solver: Defaults to asking a chat model (infill_chat) or a FIM endpoint that takes the
            suffix (infill_suffix), whichever the model is (infill), or with fim_format a FIM
            model (infill_fim).
        scorer: Defaults to running the unit tests in the sandbox (unit_tests).
        sandbox: "pool" (long-lived hardened containers) or "docker" (one per sample).
        timeout: Seconds each program may run, less time spent waiting for a CPU (the
            reference harness's 3 s).
        memory_limit: MiB of address space for each process of a program (the reference has
            no limit; at most the 1,536 MiB the sandbox container leaves to programs).
        fim_format: Prompt a base model with raw fill-in-the-middle in this family's format
            (starcoder, santacoder, codellama, codellama_spm, deepseek, qwen2.5-coder,
            codegemma, codestral, incoder), through a raw-completion provider such as
            openai-api-completions/... or vllm-completions/...; default: a chat prompt.
        shard: Run one of n shards, "i/n" numbered from 1 ("1/4" ... "4/4"): whole HumanEval
            problems per shard, balanced by number of tasks, the same split on every machine.
        limit: The samples of the whole run, before `shard` splits them, as Inspect's --limit
            takes them from the unsharded task: N (the first N) or "A-B" (the A-th to the B-th,
            from 1). `heval-inspect parallel` passes its command's --limit so.
        sample_id: The samples of the whole run by id ("HumanEval/0,HumanEval/7"), before
            `shard` splits them, as Inspect's --sample-id (passed so by `heval-inspect
            parallel`).
        variant: "original", or a semantics-preserving variant of every task, to tell memory
            from skill: "renamed" (the problem's identifiers renamed everywhere, tests
            included) or "reformatted" (the same tokens laid out differently); see
            docs/variants.md.
    """

    data_dir: str | None = None
    problem_file: str | None = None
    samples: str | None = None
    partial: bool = False
    k: int | str | list[int] = 1
    solver: Solver | None = None
    scorer: Scorer | None = None
    sandbox: SandboxName = "pool"
    timeout: float = DEFAULT_TIMEOUT
    memory_limit: int = DEFAULT_MEMORY_MIB
    fim_format: str | None = None
    shard: str | None = None
    limit: int | str | None = None
    sample_id: str | list[str] | None = None
    variant: str = ORIGINAL

    def parse(self) -> "TaskSettings":
        """The arguments parsed, before any file is read: what the task is built from. Each is
        parsed here alone; a value of the wrong type or range stops the run with what to give."""
        for name in ("data_dir", "problem_file", "samples"):
            if getattr(self, name) is not None:
                check_path(name, getattr(self, name))
        check_flag("partial", self.partial)
        check_name("sandbox", self.sandbox, ", ".join(SANDBOX_TYPES))
        check_timeout(self.timeout)
        check_memory_limit(self.memory_limit)
        fim = None if self.fim_format is None else prompts.fim_format(self.fim_format)
        k = PassAtK.parse(self.k)
        shard = parse_shard(self.shard)
        limit = parse_limit(self.limit)
        sample_ids = parse_sample_ids(self.sample_id)
        variant = check_variant(self.variant)
        _check_sandbox_name(self.sandbox)
        return TaskSettings(
            data_dir=self.data_dir,
            problem_file=self.problem_file,
            samples=self.samples,
            partial=self.partial,
            k=k,
            solver=self.solver,
            scorer=self.scorer,
            sandbox=self.sandbox,
            timeout=self.timeout,
            memory_limit=self.memory_limit,
            fim=fim,
            shard=shard,
            limit=limit,
            sample_ids=sample_ids,
            variant=variant,
        )


@dataclass(frozen=True, kw_only=True)
class TaskSettings:
    """The task arguments parsed (`TaskArguments.parse`): the values the task, its metric, its
    solver and `heval-inspect score` use, so that none parses an argument again."""

    data_dir: str | None
    problem_file: str | None
    samples: str | None  # the completion file
    partial: bool
    k: PassAtK  # the k of pass@k, ascending (k.ks), and as given, which the log records
    solver: Solver | None
    scorer: Scorer | None
    sandbox: SandboxName
    timeout: float
    memory_limit: int
    fim: FimFormat | None  # the FIM family, or None for the chat prompt
    shard: Shard | None
    limit: slice | None  # of the whole run's samples, before the shard's share
    sample_ids: list[str] | None
    variant: VariantId


# The settings each task of ours was built under, while it lives (`settings_of`).
_SETTINGS: "weakref.WeakKeyDictionary[Task, TaskSettings]" = weakref.WeakKeyDictionary()


def settings_of(task: Task) -> TaskSettings:
    """The settings a task of this package was built under: for a command that runs the task's
    programs itself (`heval-inspect score`), so that it parses no argument again."""
    return _SETTINGS[task]


def takes_task_arguments(build: Callable[..., Task]) -> Callable[..., Task]:
    """`build(settings, **own)` as a task function: given the parsed TaskArguments (TaskSettings)
    and its own keyword arguments (those of `build` after the first).

    Its signature, which Inspect reads for `-T`, the log's task arguments and the viewer, is
    keyword-only: `build`'s own arguments, then TaskArguments'. Its docstring is `build`'s, then
    TaskArguments' entries. Inspect only warns of a -T argument that a task does not take: a
    misspelt argument would then silently run the default (say, all 8,652 samples instead of a
    subset), so here it is an error that names the arguments the task takes.
    """
    own = [
        parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for parameter in list(inspect.signature(build).parameters.values())[1:]
    ]
    common = [
        inspect.Parameter(
            each.name, inspect.Parameter.KEYWORD_ONLY, default=each.default, annotation=each.type
        )
        for each in fields(TaskArguments)
    ]
    own_names = {parameter.name for parameter in own}
    names = [parameter.name for parameter in own + common]

    @functools.wraps(build)
    def function(**given: Any) -> Task:
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise TaskArgumentError(
                f"heval_inspect/{build.__name__} has no argument {', '.join(unknown)}"
                f"{did_you_mean(unknown[0], names)}: its "
                f"arguments are {', '.join(names)} (see the README's 'Task arguments')."
            )
        settings = TaskArguments(**{key: value for key, value in given.items()
                                    if key not in own_names}).parse()  # fmt: skip
        task = build(settings, **{key: given[key] for key in given if key in own_names})
        _SETTINGS[task] = settings
        return task

    summary, _, own_args = inspect.cleandoc(build.__doc__ or "").partition("Args:\n")
    common_args = inspect.cleandoc(TaskArguments.__doc__ or "").partition("Args:\n")[2]
    entries = [entry for entry in (own_args.rstrip(), common_args) if entry]
    function.__doc__ = f"{summary.rstrip()}\n\nArgs:\n" + "\n".join(entries)
    # **unknown: Inspect passes an argument the signature lacks only to a task that has one.
    unknown = inspect.Parameter("unknown", inspect.Parameter.VAR_KEYWORD, annotation=Any)
    function.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*own, *common, unknown], return_annotation=Task
    )
    return function


def _check_sandbox_name(sandbox: str) -> None:
    if sandbox not in SANDBOX_TYPES:
        raise TaskArgumentError(
            f"Unknown sandbox {sandbox!r}{did_you_mean(sandbox, SANDBOX_TYPES)}: choose from "
            f"{', '.join(SANDBOX_TYPES)}."
        )
