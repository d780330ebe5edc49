"""HumanEval (Chen et al., 2021) and HumanEval-Infilling (Bavarian et al., 2022) as Inspect tasks.

Each sample is one problem: the code before the gap (`prompt`), the code after it (`suffix`, empty
for HumanEval), the canonical span as target, and HumanEval's unit tests. The model writes the gap;
the scorer runs prompt + gap + suffix + tests in a Docker sandbox. The infilling subsets are cut
from HumanEval's canonical solutions: single line, multi line, random span, random span (light).
"""

import logging
import re
from collections.abc import Callable
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import HeadlineMetric
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Metric, Scorer

from .arguments import SANDBOX_TYPES, SandboxName, TaskSettings, parse_subsets, takes_task_arguments
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
from .errors import DataError
from .metrics import PROBLEM_ID, headline_name, humaneval_metrics
from .prompts import FimFormat, chat_prompt, fim_prompt
from .provenance import eval_metadata, task_version
from .sandbox import sandbox_compose_file
from .schema import ORIGINAL_VARIANT, SCORER, DataFile, SampleMetadata, VariantId
from .scorer import unit_tests
from .shard import apply_shard, select
from .solvers import AsksTheModel, infill_fim, replay
from .suffix_solvers import infill

logger = logging.getLogger(__name__)

# Task versions in inspect_evals' scheme "N-X": N, the comparability version, goes up when scores
# stop being comparable with earlier runs' (it is the log's `task_version`); the letter X when the
# task's arguments change in a way that can break a user's command. CHANGELOG.md says what
# changed. The infilling subsets' tasks share humaneval_infilling's version.
HUMANEVAL_VERSION = "4-A"
INFILLING_VERSION = "4-A"


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
