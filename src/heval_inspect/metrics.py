"""What a run reports: unbiased pass@k, exact match, per subset and blended, with clustered errors.

The metric reads every epoch's score of every task (Inspect's "unreduced" scores): a task with n
epochs of which c passed contributes the unbiased pass@k estimate 1 - C(n-c, k) / C(n, k) (Chen et
al., 2021), and the mean over its epochs of each exact-match score. Figures are means of those
per-task values:

- a run of one set (HumanEval, one infilling subset, a problem file): `pass@k`, `exact_match`,
  `exact_match_stripped`, each with its standard error (`..._stderr`);
- a run of several infilling subsets: each subset on its own (`single_line/pass@1`, ...) and three
  blends, named for what they are: `sample_weighted/` (mean over all tasks, the run's headline),
  `mean_of_subsets/` (unweighted mean of the subset figures, what lm-evaluation-harness reports)
  and `problem_macro/` (mean over HumanEval problems of the mean of each problem's tasks).

The first figure is the headline (pass@k for the smallest k, over the whole run), followed by
`stderr`, its standard error, under the name Inspect's log list and `evals_df` read (and only
there: each figure once); then the other pass@k figures, then exact match, then every other
standard error. Inspect counts the samples itself.

Tasks cut from the same HumanEval problem are not independent, so every standard error is
clustered by problem: for a figure T = sum_i w_i x_i (weights summing to 1) over G problems,
SE(T) = sqrt(G / (G - 1) * sum_g (sum_{i in g} w_i (x_i - T))^2). With one task per problem this is
the usual standard error of a mean; with a single problem there is no spread to measure, and it
is NaN (undefined), never 0, which would read as certainty.
"""

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from inspect_ai.hooks import Hooks, TaskStart, hooks
from inspect_ai.scorer import Metric, SampleScore, Value, metric
from numpy.typing import ArrayLike

from .data import SUBSETS
from .errors import TaskArgumentError
from .schema import MEAN_FIGURES, PASSED, SampleMetadata, figures_of, is_ours

logger = logging.getLogger(__name__)

# The name Inspect's log list and `evals_df` read the headline's standard error from.
HEADLINE_STDERR = "stderr"
# The blend a run of several subsets leads with: every task counts the same, as in the reference
# harness's mean over the tasks it is given.
HEADLINE_BLEND = "sample_weighted/"
# The sample metadata (SampleMetadata.problem_id) the standard errors are clustered by.
PROBLEM_ID = "problem_id"


def headline_name(ks: Sequence[int], per_subset: bool) -> str:
    """The figure a run leads with: pass@k for the smallest k, over the whole run."""
    return f"{HEADLINE_BLEND if per_subset else ''}pass@{min(ks)}"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct: 1 - C(n-c, k) / C(n, k).

    In the numerically stable product form of the Codex paper (Figure 3):
    1 - prod_{i=n-c+1}^{n} (1 - k / i).
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k}).")
    if n - c < k:
        return 1.0
    if c == 0:
        return 0.0  # the empty product, without numpy's cost (figures are computed per task)
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@dataclass(frozen=True)
class PassAtK:
    """The `k` argument parsed (`parse`, the one parser of it): the k of pass@k, ascending, and
    the argument as it was given, which is what a log records of it.

    The tasks parse `-T k` once and hand this to the metric, which records it as given
    (`_repr_params_`, see inspect_internals.py): the log's `k` reads as the user wrote it.
    """

    ks: tuple[int, ...]
    given: Any  # as given: 10, "1,10", [1, 10], or ["1", "10"] from `-T k=1,10`

    @classmethod
    def parse(cls, k: Any) -> "PassAtK":
        """The k of pass@k from a task argument: 10, "1,10" or [1, 10]."""
        if isinstance(k, str):
            parts: Iterable[Any] = k.split(",")
        elif isinstance(k, int) and not isinstance(k, bool):
            parts = [k]
        elif isinstance(k, list | tuple):
            parts = k
        else:
            parts = [str(k)]  # a float or a bool: refused below, as any other non-number
        try:
            ks = sorted({int(str(part).strip()) for part in parts})
        except ValueError:
            ks = []
        if not ks or ks[0] < 1:
            raise TaskArgumentError(
                f"k={k!r}: give one or more whole numbers of 1 or more, e.g. -T k=1,10."
            )
        return cls(tuple(ks), k)

    def _repr_params_(self) -> Any:
        """What Inspect records of an argument of this type (a metric's `k`): the value given."""
        return self.given


def parse_ks(k: Any) -> list[int]:
    """The k of pass@k from an argument as given (a log's `k`, say): 10, "1,10" or [1, 10]."""
    return list(PassAtK.parse(k).ks)


def weighted_mean(values: np.ndarray, weights: np.ndarray) -> float:
    """sum(w x) / sum(w), summed exactly: a run where every task passes reports 1.0, not
    0.999999999999991 (8,652 rounded weights of 1/8,652 do not add up to 1)."""
    return math.fsum(weights * values) / math.fsum(weights)


def clustered_stderr(values: np.ndarray, weights: np.ndarray, clusters: ArrayLike) -> float:
    """Standard error of sum(weights * values), clustered (weights sum to 1); NaN from fewer
    than two clusters."""
    estimate = weighted_mean(values, weights)
    _, cluster_of = np.unique(np.asarray(clusters), return_inverse=True)
    totals = np.bincount(cluster_of, weights=weights * (values - estimate))
    g = len(totals)
    if g < 2:
        return math.nan
    return float(np.sqrt(g / (g - 1) * math.fsum(totals**2)))


@dataclass(frozen=True)
class TaskColumns:
    """Per task, in task-id order: its id, its first sample's row, its number of epochs, how
    many passed, the sum over its epochs of each exact-match score, its subset and its HumanEval
    problem. What every figure is computed from, by the metric and by the report alike."""

    id: np.ndarray
    first: np.ndarray
    epochs: np.ndarray
    passed: np.ndarray
    sums: dict[str, np.ndarray]
    subset: np.ndarray
    problem: np.ndarray

    @classmethod
    def of_samples(
        cls,
        task_id: np.ndarray,
        passed: np.ndarray,
        means: dict[str, np.ndarray],
        subset: np.ndarray,
        problem: np.ndarray,
    ) -> "TaskColumns":
        """From one row per sample (a task's epochs share its id, subset and problem)."""
        ids, first, row_task = np.unique(task_id, return_index=True, return_inverse=True)
        return cls(
            id=ids,
            first=first,
            epochs=np.bincount(row_task, minlength=len(ids)).astype(int),
            passed=np.rint(np.bincount(row_task, weights=passed, minlength=len(ids))).astype(int),
            sums={
                key: np.bincount(row_task, weights=means[key], minlength=len(ids))
                for key in MEAN_FIGURES
            },
            subset=np.asarray(subset)[first],
            problem=np.asarray(problem)[first],
        )

    def only(self, ids: np.ndarray) -> "TaskColumns":
        """These tasks alone."""
        keep = np.isin(self.id, ids)
        return TaskColumns(
            id=self.id[keep],
            first=self.first[keep],
            epochs=self.epochs[keep],
            passed=self.passed[keep],
            sums={key: column[keep] for key, column in self.sums.items()},
            subset=self.subset[keep],
            problem=self.problem[keep],
        )


# Waived below, Inspect's check that a custom metric has tests of its own (custom_metric_tests):
# it reads every epoch unreduced; real evals under --epochs-reducer in test_run_output.py test it.
@metric(scores="unreduced")
def humaneval_metrics(  # inspect-evals-lint: ignore[IETS008] -- tested by real evals (above)
    k: PassAtK | int | str | list[int] = 1,
    per_subset: bool | None = None,
    cluster: str = PROBLEM_ID,
) -> Metric:
    """pass@k for each k, exact match (strict and stripped), per subset and blended.

    Args:
        k: The k of pass@k: one or several (e.g. "1,10"), or as the tasks give it, parsed
            (PassAtK). A k above the number of epochs is not reported (and a warning says
            why).
        per_subset: Report each subset under its own prefix, and the blends. Default: when the
            scores hold several subsets (the tasks set it from the subsets they were given, so
            that a run cut down to one subset keeps its names).
        cluster: The sample metadata that says which HumanEval problem a task was cut from; the
            standard errors are clustered by it.
    """
    if not isinstance(k, PassAtK):  # as given (a call of its own, a log's metrics)
        k = PassAtK.parse(k)
    ks = list(k.ks)

    def compute(scores: list[SampleScore]) -> Value:
        if not scores:
            # Before any sample is scored (Inspect's live display asks at the start), the
            # headline is undefined, yet named: the task declares it as its headline metric.
            return {headline_name(ks, bool(per_subset)): math.nan}
        figures = summarise(_tasks(scores, cluster), ks, per_subset)
        # The headline first, then its standard error under the name Inspect reads it by (and
        # only there: the log shows each figure once).
        lead = next(iter(figures))
        return {lead: figures[lead], HEADLINE_STDERR: figures.pop(f"{lead}_stderr")} | figures

    return compute


def summarise(
    tasks: TaskColumns, ks: list[int], per_subset: bool | None = None
) -> dict[str, float]:
    """Every figure of a run and its standard error (`..._stderr`), from its task columns, the
    headline first (the metric logs the headline's error as `stderr`).

    The metric's computation, also used by `heval-inspect report` on the tasks it reads from logs
    (and merges from shards), so that both give the same numbers.
    """
    # A pass@k that some task has too few epochs for is left out (never NaN); the run was
    # told why when it started (KTooLargeWarning).
    values = task_values(tasks, reportable_ks(tasks, ks))
    problem_index = problem_numbers(tasks.problem)
    rows = blends(tasks.subset, tasks.problem, per_subset)
    estimates: dict[str, float] = {}
    errors: dict[str, float] = {}
    for name, all_values in values.items():
        for prefix, weights in rows.items():
            chosen = weights > 0
            share = weights[chosen] / math.fsum(weights[chosen])
            figure = all_values[chosen]
            estimates[prefix + name] = weighted_mean(figure, share)
            errors[f"{prefix}{name}_stderr"] = clustered_stderr(
                figure, share, problem_index[chosen]
            )
    return estimates | errors


def reportable_ks(tasks: TaskColumns, ks: list[int]) -> list[int]:
    """The k of pass@k that every task has enough epochs for."""
    n_min = int(tasks.epochs.min())
    return [each for each in ks if each <= n_min]


def task_values(tasks: TaskColumns, ks: list[int]) -> dict[str, np.ndarray]:
    """Each figure's value per task: pass@k for each k, then the exact-match shares."""
    return {name: figure(tasks) for name, figure in _figures(ks).items()}


def problem_numbers(problems: np.ndarray) -> np.ndarray:
    """Each task's HumanEval problem as a number (the clusters of the standard errors)."""
    return np.unique(problems, return_inverse=True)[1]


def blends(
    subsets: np.ndarray, problems: np.ndarray, per_subset: bool | None = None
) -> dict[str, np.ndarray]:
    """The weights of each reported group of tasks, by its name's prefix.

    One set: {"": every task}. Several subsets (or `per_subset`): the headline blend
    (`sample_weighted/`), each subset in the usual order, `mean_of_subsets/` (each subset weighs
    the same) and `problem_macro/` (each HumanEval problem weighs the same). A task outside a
    group has weight 0.
    """
    _, problem_index, tasks_per_problem = np.unique(
        problems, return_inverse=True, return_counts=True
    )
    names, sizes = np.unique(subsets, return_counts=True)
    size_of = dict(zip(names, sizes, strict=True))
    everything = np.ones(len(subsets))
    if not (len(names) > 1 if per_subset is None else per_subset):
        return {"": everything}
    ordered = sorted(names, key=subset_order)
    rows = (
        {HEADLINE_BLEND: everything}
        | {f"{subset}/": (subsets == subset).astype(float) for subset in ordered}
        | {
            "mean_of_subsets/": 1.0 / np.array([size_of[s] for s in subsets]),
            "problem_macro/": 1.0 / tasks_per_problem[problem_index],
        }
    )
    return rows


def _tasks(scores: list[SampleScore], cluster: str) -> TaskColumns:
    """The task columns of the scores of every epoch of every task."""
    values = [figures_of(sample_score.score.value) for sample_score in scores]
    ids = [str(sample_score.sample_id) for sample_score in scores]
    metadata = [
        SampleMetadata.read(sample_score.sample_metadata, id)
        for sample_score, id in zip(scores, ids, strict=True)
    ]
    # Another cluster than ours (a sample of another dataset) is read under the name given.
    problems = (
        [each.problem_id for each in metadata]
        if cluster == PROBLEM_ID
        else [
            (sample_score.sample_metadata or {}).get(cluster, id)
            for sample_score, id in zip(scores, ids, strict=True)
        ]
    )
    return TaskColumns.of_samples(
        task_id=np.array(ids),
        passed=np.array([float(value[PASSED]) for value in values]),
        means={key: np.array([float(value[key]) for value in values]) for key in MEAN_FIGURES},
        subset=np.array([each.subset for each in metadata]),
        problem=np.array(problems),
    )


def subset_order(name: str) -> tuple[int, str]:
    """The official subsets in their usual order (single line first), then any others by name."""
    known = list(SUBSETS)
    return (known.index(name), "") if name in known else (len(known), name)


def _figures(ks: list[int]) -> dict[str, Callable[[TaskColumns], np.ndarray]]:
    """Each reported figure as a function of the task columns: its value per task."""

    def pass_at(k: int) -> Callable[[TaskColumns], np.ndarray]:
        def figure(tasks: TaskColumns) -> np.ndarray:
            pairs = list(zip(tasks.epochs.tolist(), tasks.passed.tolist(), strict=True))
            # Tasks share a few (n, c) pairs: each estimate is computed once.
            estimate = {pair: pass_at_k(*pair, k) for pair in set(pairs)}
            return np.array([estimate[pair] for pair in pairs])

        return figure

    def mean_of(key: str) -> Callable[[TaskColumns], np.ndarray]:
        return lambda tasks: tasks.sums[key] / tasks.epochs

    return {f"pass@{k}": pass_at(k) for k in ks} | {key: mean_of(key) for key in MEAN_FIGURES}


@hooks(
    name="heval_inspect_k_check",
    description="heval_inspect: warns when a pass@k needs more epochs than the run has.",
)
class KTooLargeWarning(Hooks):
    """Tells, once at the start of a task of ours, which pass@k its epochs cannot give."""

    async def on_task_start(self, data: TaskStart) -> None:
        if not is_ours(data.spec.task_registry_name):
            return
        epochs = data.spec.config.epochs or 1
        too_large = [k for k in parse_ks(data.spec.task_args.get("k", 1)) if k > epochs]
        if too_large:
            names = ", ".join(f"pass@{k}" for k in too_large)
            logger.warning(
                f"{names} will not be reported: pass@k needs at least k epochs per task and this "
                f"run has {epochs}. Run with --epochs {max(too_large)} to get {names}."
            )
