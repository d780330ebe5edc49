"""HumanEval (Chen et al., 2021) and HumanEval-Infilling (Bavarian et al., 2022) as Inspect tasks.

Each sample is one problem: the code before the gap (`prompt`), the code after it (`suffix`, empty
for HumanEval), the canonical span as target, and HumanEval's unit tests. The model writes the gap;
the scorer runs prompt + gap + suffix + tests in a Docker sandbox. The infilling subsets are cut
from HumanEval's canonical solutions: single line, multi line, random span, random span (light).
"""

import functools
import inspect
import logging
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import HeadlineMetric
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Metric, Scorer
from inspect_ai.solver import Solver

from . import prompts
from .arguments import check_flag, check_memory_limit, check_name, check_path, check_timeout
from .data import (
    HUMANEVAL,
    SUBSETS,
    ProblemFile,
    check_completions,
    open_official,
    open_problems,
    remember,
    variant_file,
)
from .errors import DataError, TaskArgumentError, did_you_mean
from .metrics import PROBLEM_ID, PassAtK, headline_name, humaneval_metrics
from .prompts import FimFormat, chat_prompt, fim_prompt
from .provenance import eval_metadata, task_version
from .sandbox import DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT, sandbox_compose_file
from .schema import ORIGINAL, ORIGINAL_VARIANT, SCORER, DataFile, SampleMetadata, VariantId
from .scorer import unit_tests
from .shard import Shard, apply_shard, parse_limit, parse_sample_ids, parse_shard, select
from .solvers import AsksTheModel, infill_fim, replay
from .suffix_solvers import infill
from .variants import check_variant

logger = logging.getLogger(__name__)

# Task versions in inspect_evals' scheme "N-X": N, the comparability version, goes up when scores
# stop being comparable with earlier runs' (it is the log's `task_version`); the letter X when the
# task's arguments change in a way that can break a user's command. CHANGELOG.md says what
# changed. The infilling subsets' tasks share humaneval_infilling's version.
HUMANEVAL_VERSION = "4-A"
INFILLING_VERSION = "4-A"

# "pool": a few long-lived hardened containers (fast; see sandbox/pool.py); "docker": Inspect's
# own sandbox, one compose project per sample. Both use the same compose file. "local": no
# container at all, only for those who cannot run Docker and trust the code (warned).
SandboxName = Literal["pool", "docker", "local"]
SANDBOX_TYPES = {"pool": "heval_pool", "docker": "docker", "local": "local"}

# Room for the longest canonical span (under 300 tokens) and a model's detours; the raw-completion
# providers would otherwise ask for 1 token. `--max-tokens` overrides it.
FIM_MAX_TOKENS = 1024


def record_to_sample(
    record: dict,
    subset: str,
    source: str,
    fim: FimFormat | None = None,
    variant: VariantId = ORIGINAL_VARIANT,
) -> Sample:
    """One problem as a sample; its input is the chat prompt, or the raw prompt of a FIM family.

    Its metadata names the problem (subset, HumanEval problem, and the file it came from, where
    the solvers and the scorer find its texts): the prompt and suffix are in the input already,
    and the whole program, tests included, is in the sample's transcript (see the scorer).
    """
    prompt, suffix = record["prompt"], record.get("suffix", "")
    return Sample(
        id=record["task_id"],
        input=fim_prompt(fim, prompt, suffix) if fim else chat_prompt(prompt, suffix),
        target=record["canonical_solution"],
        metadata=SampleMetadata(subset, problem_id(record["task_id"]), source, variant).metadata(),
    )


def samples_of(files: list[tuple[ProblemFile, str]], fim: FimFormat | None) -> list[Sample]:
    """The samples of some problem files, each with its subset's name."""
    samples = []
    for file, subset in files:
        remember(file)
        samples += [
            record_to_sample(record, subset, file.source, fim, file.variant)
            for record in file.records
        ]
    return samples


def problem_id(task_id: str) -> str:
    """The HumanEval problem a task was cut from: "MultiLineInfilling/HumanEval/0/L2" ->
    "HumanEval/0"."""
    match = re.search(r"HumanEval/\d+", task_id)
    return match.group(0) if match else task_id


def problem_of(sample: Sample) -> str:
    """The HumanEval problem a sample was cut from: what shards keep together."""
    return problem_id(str(sample.id))


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
    these fields (see `task_function`), so they are written here once.

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


def _sandbox(sandbox: SandboxName) -> str | tuple[str, str]:
    if sandbox == "local":
        logger.warning(
            "sandbox=local runs model-written code directly on this machine, as you, with CPU, "
            "memory and file-size limits but no isolation: no container, network reachable, "
            "your files and environment exposed. Use it only for code you trust; the default "
            "(pool) and docker sandboxes isolate it."
        )
        return "local"
    return (SANDBOX_TYPES[sandbox], str(sandbox_compose_file()))


def _task(files: list[tuple[ProblemFile, str]], version: str, settings: TaskSettings) -> Task:
    """The task of these problem files (each with its subset's name), under these settings."""
    fim, solver, completions = settings.fim, settings.solver, settings.samples
    # The provenance records the published files (path and SHA-256) a variant is built from.
    data_files = [DataFile("problems", str(file.path), file.sha256) for file, _ in files]
    files = [(variant_file(file, settings.variant), subset) for file, subset in files]
    samples = samples_of(files, fim)
    # pass@k needs k samples per task: by default, as many epochs as the largest k.
    epochs = max(settings.k.ks)
    if completions:
        samples, epochs = _replayed(samples, completions, settings.partial)
        solver = solver or replay(completions)
        checksum = check_completions(completions).sha256  # the file checked by _replayed above
        data_files.append(DataFile("completions", str(Path(completions).resolve()), checksum))
    # The run's samples, then (below) the shard's share of them.
    samples = select(samples, settings.limit, settings.sample_ids, lambda sample: str(sample.id))
    # Several subsets report each under its prefix, and blends; named by the task's subsets, so
    # that a run cut down to one subset (--limit) keeps the names its headline is declared by.
    per_subset = len({subset for _, subset in files}) > 1
    # The default solver asks the model: in the family's FIM format, else as its provider takes.
    asks = None
    if solver is None:
        asks = solver = (
            AsksTheModel(infill_fim(fim), "heval_inspect/infill_fim")
            if fim
            else AsksTheModel(infill(), "heval_inspect/infill")
        )
    scorer, metric, headline = _scoring(settings, per_subset)
    task = Task(
        dataset=MemoryDataset(samples, name=dataset_name([file for file, _ in files])),
        epochs=epochs,
        solver=solver,
        config=_generate_config(fim),
        scorer=scorer,
        metrics=None if metric is None else [metric],
        headline_metric=headline,
        sandbox=_sandbox(settings.sandbox),
        version=task_version(version),
        metadata=eval_metadata(
            version,
            data_files,
            settings.sandbox,
            settings.timeout,
            settings.memory_limit,
            fim,
            settings.variant,
        ),
    )
    task = apply_shard(task, settings.shard, problem_of)
    if asks is not None:
        asks.task = task  # a model of its own (task_with(task, model=...)) is the one asked
    return task


def _generate_config(fim: FimFormat | None) -> GenerateConfig:
    """A FIM family's room for the gap (raw-completion providers would ask for 1 token) and its
    stop tokens; nothing for the chat prompt."""
    if fim is None:
        return GenerateConfig()
    return GenerateConfig(max_tokens=FIM_MAX_TOKENS, stop_seqs=list(fim.stop))


def _scoring(
    settings: TaskSettings, per_subset: bool
) -> tuple[Scorer, Metric | None, HeadlineMetric | None]:
    """The scorer, the metric and the headline: the unit tests with the pass@k asked for, or a
    scorer of the user's own with its own metrics and headline."""
    if settings.scorer:
        return settings.scorer, None, None
    return (
        unit_tests(timeout=settings.timeout, memory_limit=settings.memory_limit),
        # `cluster` is given by name so that the viewer labels the error bar stderr[problem_id].
        humaneval_metrics(settings.k, per_subset=per_subset, cluster=PROBLEM_ID),
        HeadlineMetric(scorer=SCORER, metric=headline_name(settings.k.ks, per_subset)),
    )


def dataset_name(files: list[ProblemFile]) -> str:
    """What the run's header, the log and `evals_df` call the data: the files' names without
    extensions, as openai names them ("HumanEval", "HumanEval-SingleLineInfilling", ...), or
    the user's file; all four infilling subsets together are "HumanEval-Infilling"."""
    if len(files) == len(SUBSETS) > 1:
        return "HumanEval-Infilling"
    return "+".join(file.path.name.split(".")[0] for file in files)


def _replayed(samples: list[Sample], path: str, partial: bool) -> tuple[list[Sample], int]:
    """The samples a completion file answers, and its number of completions per task (epochs).

    Checked before anything runs: every task id must belong to the task, and every task must have
    completions unless `partial` (then only the tasks present are scored).
    """
    completions = check_completions(path).counts
    known = {str(sample.id) for sample in samples}
    unknown = [task_id for task_id in completions if task_id not in known]
    if unknown:
        raise DataError(
            f"{path}: {len(unknown)} task id(s) are not problems of this task, e.g. "
            f"{', '.join(unknown[:3])}. Score the file with the task it was made for (task ids "
            f"start with HumanEval/, SingleLineInfilling/, MultiLineInfilling/, "
            f"RandomSpanInfilling/ or RandomSpanInfillingLight/), or with -T problem_file=..."
        )
    missing = [str(sample.id) for sample in samples if str(sample.id) not in completions]
    if missing and not partial:
        raise DataError(
            f"{path} has no completion for {len(missing)} of the {len(samples)} tasks, e.g. "
            f"{', '.join(missing[:3])}. Add them, or pass -T partial=true to score only the "
            f"{len(samples) - len(missing)} tasks it has."
        )
    counts = sorted(set(completions.values()))
    if len(counts) > 1:
        logger.warning(
            f"{path}: tasks have from {counts[0]} to {counts[-1]} completions; scoring the first "
            f"{counts[0]} of each, since pass@k needs the same number for every task (use "
            f"--epochs to choose fewer)."
        )
    return [sample for sample in samples if str(sample.id) in completions], counts[0]


@task
@takes_task_arguments
def humaneval(settings: TaskSettings) -> Task:
    """HumanEval: complete each function from its signature and docstring."""
    file = (
        open_problems(settings.problem_file)
        if settings.problem_file
        else open_official(HUMANEVAL, settings.data_dir)
    )
    return _task([(file, "humaneval")], HUMANEVAL_VERSION, settings)


@task
@takes_task_arguments
def humaneval_infilling(settings: TaskSettings, subsets: str | list[str] = "all") -> Task:
    """HumanEval-Infilling: every sample asks for the code of one gap, in four subsets.

    Args:
        subsets: "all" or a comma-separated list of single_line, multi_line, random_span,
            random_span_light.
    """
    return _infilling(settings, subsets)


def _infilling(settings: TaskSettings, subsets: str | list[str]) -> Task:
    if settings.problem_file:
        files = [(open_problems(settings.problem_file), Path(settings.problem_file).stem)]
    else:
        files = [
            (open_official(SUBSETS[name], settings.data_dir), name)
            for name in parse_subsets(subsets)
        ]
    return _task(files, INFILLING_VERSION, settings)


# Each infilling subset as a task of its own: humaneval_infilling with `subsets` fixed.


@task
@takes_task_arguments
def humaneval_single_line_infilling(settings: TaskSettings) -> Task:
    """HumanEval-Infilling, single-line subset."""
    return _infilling(settings, "single_line")


@task
@takes_task_arguments
def humaneval_multi_line_infilling(settings: TaskSettings) -> Task:
    """HumanEval-Infilling, multi-line subset."""
    return _infilling(settings, "multi_line")


@task
@takes_task_arguments
def humaneval_random_span_infilling(settings: TaskSettings) -> Task:
    """HumanEval-Infilling, random-span subset."""
    return _infilling(settings, "random_span")


@task
@takes_task_arguments
def humaneval_random_span_infilling_light(settings: TaskSettings) -> Task:
    """HumanEval-Infilling, random-span-light subset (one span per problem)."""
    return _infilling(settings, "random_span_light")


# The tasks by name, for a command that builds them outside `inspect eval` (score.py).
TASKS: dict[str, Callable[..., Task]] = {
    function.__name__: function
    for function in (
        humaneval,
        humaneval_infilling,
        humaneval_single_line_infilling,
        humaneval_multi_line_infilling,
        humaneval_random_span_infilling,
        humaneval_random_span_infilling_light,
    )
}
