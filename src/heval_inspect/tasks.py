"""HumanEval (Chen et al., 2021) and HumanEval-Infilling (Bavarian et al., 2022) as Inspect tasks.

Each sample is one problem: the code before the gap (`prompt`), the code after it (`suffix`, empty
for HumanEval), the canonical span as target, and HumanEval's unit tests. The model writes the gap;
the scorer runs prompt + gap + suffix + tests in a Docker sandbox. The infilling subsets are cut
from HumanEval's canonical solutions: single line, multi line, random span, random span (light).
"""

import inspect
import logging
import re
from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import HeadlineMetric
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Scorer
from inspect_ai.solver import Solver

from . import prompts
from .arguments import check_flag, check_memory_limit, check_name, check_path, check_timeout
from .data import (
    HUMANEVAL,
    SUBSETS,
    ProblemFile,
    open_official,
    open_problems,
    read_completions,
    remember,
    sha256_of,
)
from .errors import DataError, TaskArgumentError
from .metrics import headline_name, humaneval_metrics, parse_ks
from .prompts import FimFormat, chat_prompt, fim_prompt
from .provenance import eval_metadata, task_version
from .sandbox import COMPOSE_FILE, DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT
from .schema import SCORER
from .scorer import unit_tests
from .shard import apply_shard, parse_shard
from .solvers import infill_chat, infill_fim, replay

logger = logging.getLogger(__name__)

# Task versions in inspect_evals' scheme "N-X": N, the comparability version, goes up when scores
# stop being comparable with earlier runs' (it is the log's `task_version`); the letter X when the
# task's arguments change in a way that can break a user's command. CHANGELOG.md says what
# changed. The infilling subsets' tasks share humaneval_infilling's version.
HUMANEVAL_VERSION = "2-B"
INFILLING_VERSION = "2-B"

# "pool": a few long-lived hardened containers (fast; see sandbox/pool.py); "docker": Inspect's
# own sandbox, one compose project per sample. Both use the same compose file. "local": no
# container at all, only for those who cannot run Docker and trust the code (warned).
SandboxName = Literal["pool", "docker", "local"]
SANDBOX_TYPES = {"pool": "heval_pool", "docker": "docker", "local": "local"}

# Room for the longest canonical span (under 300 tokens) and a model's detours; the raw-completion
# providers would otherwise ask for 1 token. `--max-tokens` overrides it.
FIM_MAX_TOKENS = 1024


def record_to_sample(
    record: dict, subset: str, source: str, fim: FimFormat | None = None
) -> Sample:
    """One problem as a sample; its input is the chat prompt, or the raw prompt of a FIM family.

    Its metadata names the problem (subset, HumanEval problem, and the file it came from, where
    the solvers and the scorer find its texts): the prompt and suffix are in the input already,
    and the whole program, tests included, is in the score's explanation.
    """
    prompt, suffix = record["prompt"], record.get("suffix", "")
    return Sample(
        id=record["task_id"],
        input=fim_prompt(fim, prompt, suffix) if fim else chat_prompt(prompt, suffix),
        target=record["canonical_solution"],
        metadata={"subset": subset, "problem_id": problem_id(record["task_id"]), "source": source},
    )


def samples_of(files: list[tuple[ProblemFile, str]], fim: FimFormat | None) -> list[Sample]:
    """The samples of some problem files, each with its subset's name."""
    samples = []
    for file, subset in files:
        remember(file)
        samples += [record_to_sample(record, subset, file.source, fim) for record in file.records]
    return samples


def problem_id(task_id: str) -> str:
    """The HumanEval problem a task was cut from: "MultiLineInfilling/HumanEval/0/L2" -> "HumanEval/0"."""
    match = re.search(r"HumanEval/\d+", task_id)
    return match.group(0) if match else task_id


def _problem_of(sample: Sample) -> str:
    return problem_id(str(sample.id))


def parse_subsets(subsets: str | list[str]) -> list[str]:
    names = list(SUBSETS) if subsets == "all" else subsets
    if isinstance(names, str):
        names = [name.strip() for name in names.split(",")]
    if not isinstance(names, list):
        names = [names]
    unknown = [name for name in names if name not in SUBSETS]
    if unknown or not names:
        raise TaskArgumentError(
            f"Unknown infilling subset(s) {unknown or names}: choose from {', '.join(SUBSETS)}, "
            f"or 'all' (e.g. -T subsets=single_line,multi_line)."
        )
    return names


def refuse_unknown_arguments(task_name: str, task_function, unknown: dict[str, Any]) -> None:
    """Inspect only warns of a -T argument that a task does not take; a misspelt argument would
    then silently run the default (say, all 8,652 samples instead of a subset), so it is an error.
    The tasks take **unknown to see such arguments at all."""
    if not unknown:
        return
    known = [
        name
        for name, parameter in inspect.signature(task_function).parameters.items()
        if parameter.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    raise TaskArgumentError(
        f"heval_inspect/{task_name} has no argument {', '.join(sorted(unknown))}: its arguments "
        f"are {', '.join(known)} (see the README's 'Task arguments')."
    )


def check_arguments(
    data_dir: Any,
    problem_file: Any,
    samples: Any,
    partial: Any,
    sandbox: Any,
    timeout: Any,
    memory_limit: Any,
    fim_format: Any,
) -> None:
    """The plain-valued arguments every task takes, checked before any file is read."""
    paths = {"data_dir": data_dir, "problem_file": problem_file, "samples": samples}
    for name, path in paths.items():
        if path is not None:
            check_path(name, path)
    check_flag("partial", partial)
    check_name("sandbox", sandbox, ", ".join(SANDBOX_TYPES))
    check_timeout(timeout)
    check_memory_limit(memory_limit)
    if fim_format is not None:
        check_name("fim_format", fim_format, ", ".join(prompts.FIM_FORMATS))


def _sandbox(sandbox: SandboxName) -> str | tuple[str, str]:
    if sandbox not in SANDBOX_TYPES:
        raise TaskArgumentError(
            f"Unknown sandbox {sandbox!r}: choose from {', '.join(SANDBOX_TYPES)}."
        )
    if sandbox == "local":
        logger.warning(
            "sandbox=local runs model-written code directly on this machine, as you, with CPU, "
            "memory and file-size limits but no isolation: no container, network reachable, "
            "your files and environment exposed. Use it only for code you trust; the default "
            "(pool) and docker sandboxes isolate it."
        )
        return "local"
    return (SANDBOX_TYPES[sandbox], str(COMPOSE_FILE))


def _task(
    files: list[tuple[ProblemFile, str]],
    version: str,
    fim: FimFormat | None,
    completions: str | None,
    partial: bool,
    k: int | str | list[int],
    solver: Solver | None,
    scorer: Scorer | None,
    sandbox: SandboxName,
    timeout: float,
    memory_limit: int,
) -> Task:
    samples = samples_of(files, fim)
    data_files = [
        {"role": "problems", "path": str(file.path), "sha256": file.sha256} for file, _ in files
    ]
    # pass@k needs k samples per task: by default, as many epochs as the largest k.
    ks = parse_ks(k)
    epochs = max(ks)
    if completions:
        samples, epochs = _replayed(samples, completions, partial)
        solver = solver or replay(completions)
        path = Path(completions)
        data_files.append(
            {"role": "completions", "path": str(path.resolve()), "sha256": sha256_of(path)}
        )
    if fim:
        solver = solver or infill_fim(fim.name)
    # Several subsets report each under its prefix, and blends; named by the task's subsets, so
    # that a run cut down to one subset (--limit) keeps the names its headline is declared by.
    per_subset = len({subset for _, subset in files}) > 1
    return Task(
        dataset=MemoryDataset(samples, name=dataset_name([file for file, _ in files])),
        epochs=epochs,
        solver=solver or infill_chat(),
        config=(
            GenerateConfig(max_tokens=FIM_MAX_TOKENS, stop_seqs=list(fim.stop))
            if fim
            else GenerateConfig()
        ),
        scorer=scorer or unit_tests(timeout=timeout, memory_limit=memory_limit),
        # The pass@k asked for; a scorer of the user's own keeps its own metrics and headline.
        # `cluster` is given by name so that the viewer labels the error bar stderr[problem_id].
        metrics=(
            None
            if scorer
            else [humaneval_metrics(k, per_subset=per_subset, cluster="problem_id")]
        ),
        headline_metric=(
            None
            if scorer
            else HeadlineMetric(scorer=SCORER, metric=headline_name(ks, per_subset))
        ),
        sandbox=_sandbox(sandbox),
        version=task_version(version),
        metadata=eval_metadata(version, data_files, sandbox, timeout, memory_limit, fim),
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
    completions = read_completions(path)
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
    counts = sorted({len(answers) for answers in completions.values()})
    if len(counts) > 1:
        logger.warning(
            f"{path}: tasks have from {counts[0]} to {counts[-1]} completions; scoring the first "
            f"{counts[0]} of each, since pass@k needs the same number for every task (use "
            f"--epochs to choose fewer)."
        )
    return [sample for sample in samples if str(sample.id) in completions], counts[0]


@task
def humaneval_infilling(
    subsets: str | list[str] = "all",
    data_dir: str | None = None,
    problem_file: str | None = None,
    samples: str | None = None,
    partial: bool = False,
    k: int | str | list[int] = 1,
    solver: Solver | None = None,
    scorer: Scorer | None = None,
    sandbox: SandboxName = "pool",
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit: int = DEFAULT_MEMORY_MIB,
    fim_format: str | None = None,
    shard: str | None = None,
    **unknown: Any,
) -> Task:
    """HumanEval-Infilling: every sample asks for the code of one gap.

    Args:
        subsets: "all" or a comma-separated list of single_line, multi_line, random_span,
            random_span_light.
        data_dir: A local folder with the official files (default: $HEVAL_DATA_DIR, else download).
        problem_file: Score any problem file in the reference's format instead (JSON lines with
            task_id, prompt, suffix, canonical_solution, test, entry_point); `subsets` is ignored.
        samples: Score completions made elsewhere (the reference's format, JSON lines of
            task_id and completion) instead of asking a model: sets the solver to replay and the
            epochs to the completions per task, after checking the file against the problems.
        partial: With `samples`, score only the tasks the file has completions for.
        k: The k of pass@k, one or several ("1,10"); each needs at least k epochs (--epochs).
        solver: Defaults to asking a chat model (infill_chat), or with fim_format a FIM model
            (infill_fim).
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
    """
    refuse_unknown_arguments("humaneval_infilling", humaneval_infilling, unknown)
    check_arguments(
        data_dir, problem_file, samples, partial, sandbox, timeout, memory_limit, fim_format
    )
    part = parse_shard(shard)
    fim = prompts.fim_format(fim_format) if fim_format else None
    if problem_file:
        files = [(open_problems(problem_file), Path(problem_file).stem)]
    else:
        files = [
            (open_official(SUBSETS[name], data_dir), name) for name in parse_subsets(subsets)
        ]
    task = _task(
        files, INFILLING_VERSION, fim, samples, partial, k, solver, scorer, sandbox, timeout,
        memory_limit,
    )
    return apply_shard(task, part, _problem_of)


def _subset_task(name: str, subset: str, size: str):
    """One infilling subset as a task of its own: `humaneval_infilling` with `subsets` fixed."""

    @task(name=name)
    def subset_task(
        data_dir: str | None = None,
        problem_file: str | None = None,
        samples: str | None = None,
        partial: bool = False,
        k: int | str | list[int] = 1,
        solver: Solver | None = None,
        scorer: Scorer | None = None,
        sandbox: SandboxName = "pool",
        timeout: float = DEFAULT_TIMEOUT,
        memory_limit: int = DEFAULT_MEMORY_MIB,
        fim_format: str | None = None,
        shard: str | None = None,
        **unknown: Any,
    ) -> Task:
        refuse_unknown_arguments(name, subset_task, unknown)
        return humaneval_infilling(
            subsets=subset,
            data_dir=data_dir,
            problem_file=problem_file,
            samples=samples,
            partial=partial,
            k=k,
            solver=solver,
            scorer=scorer,
            sandbox=sandbox,
            timeout=timeout,
            memory_limit=memory_limit,
            fim_format=fim_format,
            shard=shard,
        )

    subset_task.__doc__ = f"HumanEval-Infilling, {subset.replace('_', '-')} subset ({size} tasks)."
    return subset_task


humaneval_single_line_infilling = _subset_task(
    "humaneval_single_line_infilling", "single_line", "1,033"
)
humaneval_multi_line_infilling = _subset_task(
    "humaneval_multi_line_infilling", "multi_line", "5,815"
)
humaneval_random_span_infilling = _subset_task(
    "humaneval_random_span_infilling", "random_span", "1,640"
)
humaneval_random_span_infilling_light = _subset_task(
    "humaneval_random_span_infilling_light", "random_span_light", "164"
)


@task
def humaneval(
    data_dir: str | None = None,
    problem_file: str | None = None,
    samples: str | None = None,
    partial: bool = False,
    k: int | str | list[int] = 1,
    solver: Solver | None = None,
    scorer: Scorer | None = None,
    sandbox: SandboxName = "pool",
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit: int = DEFAULT_MEMORY_MIB,
    fim_format: str | None = None,
    shard: str | None = None,
    **unknown: Any,
) -> Task:
    """HumanEval: complete each function from its signature and docstring (164 problems).

    Args:
        data_dir: A local folder with HumanEval.jsonl.gz (default: $HEVAL_DATA_DIR, else download).
        problem_file: Score any problem file in the reference's format instead.
        samples: Score completions made elsewhere (the reference's format, JSON lines of
            task_id and completion) instead of asking a model: sets the solver to replay and the
            epochs to the completions per task, after checking the file against the problems.
        partial: With `samples`, score only the tasks the file has completions for.
        k: The k of pass@k, one or several ("1,10"); each needs at least k epochs (--epochs).
        solver: Defaults to asking a chat model (infill_chat), or with fim_format a FIM model
            (infill_fim).
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
    """
    refuse_unknown_arguments("humaneval", humaneval, unknown)
    check_arguments(
        data_dir, problem_file, samples, partial, sandbox, timeout, memory_limit, fim_format
    )
    part = parse_shard(shard)
    fim = prompts.fim_format(fim_format) if fim_format else None
    file = open_problems(problem_file) if problem_file else open_official(HUMANEVAL, data_dir)
    task = _task(
        [(file, "humaneval")], HUMANEVAL_VERSION, fim, samples, partial, k, solver, scorer,
        sandbox, timeout, memory_limit,
    )
    return apply_shard(task, part, _problem_of)
