"""pass@k, exact match, blends and clustered standard errors, against computations by hand."""

import math
from fractions import Fraction

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import SampleScore, Score
from inspect_ai.solver import Generate, TaskState, solver

from heval_inspect.metrics import clustered_stderr, humaneval_metrics, parse_ks, pass_at_k
from heval_inspect.solvers import MIDDLE
from heval_inspect.tasks import humaneval_infilling

GRID = [
    (n, c, k)
    for n in (1, 2, 5, 10, 20, 100, 200)
    for c in range(0, n + 1, max(1, n // 10))
    for k in (1, 2, 5, 10, 50, 100, 200)
    if k <= n
]


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize("n, c, k", GRID)
def test_pass_at_k_equals_the_exact_combinatorial_value(n, c, k):
    assert abs(pass_at_k(n, c, k) - float(exact_pass_at_k(n, c, k))) <= 1e-12


def test_pass_at_k_refuses_k_above_n():
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(5, 2, 10)


@pytest.mark.parametrize(
    "argument, ks", [(1, [1]), ("1,10", [1, 10]), ("10, 1", [1, 10]), ([100, 1], [1, 100])]
)
def test_k_argument_forms(argument, ks):
    assert parse_ks(argument) == ks


@pytest.mark.parametrize("argument", ["0", "ten", "", [-1]])
def test_bad_k_argument_says_what_to_give(argument):
    with pytest.raises(ValueError, match="whole numbers of 1 or more"):
        parse_ks(argument)


def by_hand_clustered_se(values, weights, clusters):
    estimate = sum(w * x for w, x in zip(weights, values, strict=True))
    totals = {}
    for w, x, g in zip(weights, values, clusters, strict=True):
        totals[g] = totals.get(g, 0.0) + w * (x - estimate)
    g = len(totals)
    return math.sqrt(g / (g - 1) * sum(t * t for t in totals.values()))


def test_clustered_stderr_with_one_task_per_problem_is_the_usual_standard_error():
    values = [1.0, 0.0, 1.0, 1.0, 0.0]
    mean = sum(values) / 5
    usual = math.sqrt(sum((x - mean) ** 2 for x in values) / (5 - 1) / 5)
    import numpy as np

    got = clustered_stderr(np.array(values), np.full(5, 0.2), ["a", "b", "c", "d", "e"])
    assert got == pytest.approx(usual, abs=1e-12)


def sample_scores(rows):
    """SampleScores of (task id, subset, problem, passed) rows, one epoch each."""
    return [
        SampleScore(
            score=Score(
                value={"passed": float(p), "exact_match": 0.0, "exact_match_stripped": 0.0}
            ),
            sample_id=task_id,
            sample_metadata={"subset": subset, "problem_id": problem},
        )
        for task_id, subset, problem, p in rows
    ]


def test_the_headline_and_its_standard_error_lead_then_pass_at_k_then_the_rest():
    scores = sample_scores(
        [("a", "multi_line", "P0", 1), ("b", "single_line", "P0", 0), ("c", "single_line", "P1", 1)]
    )
    figures = humaneval_metrics(k=1)(scores)
    assert list(figures)[:9] == [
        "sample_weighted/pass@1",
        "stderr",
        "single_line/pass@1",  # the subsets in their usual order, then the other blends
        "multi_line/pass@1",
        "mean_of_subsets/pass@1",
        "problem_macro/pass@1",
        "sample_weighted/exact_match",
        "single_line/exact_match",
        "multi_line/exact_match",
    ]
    # Each figure once: the headline's error only as `stderr`, no counts (Inspect has them).
    assert "sample_weighted/pass@1_stderr" not in figures
    assert list(figures)[-1] == "problem_macro/exact_match_stripped_stderr"
    one_set = humaneval_metrics(k=1)(scores[1:2] + scores[2:])
    assert list(one_set)[:3] == ["pass@1", "stderr", "exact_match"]
    assert "pass@1_stderr" not in one_set and "samples" not in one_set
    assert one_set["stderr"] == pytest.approx(0.5)  # 0 and 1 in two problems: sqrt(2 * 2 * 0.25^2)


def test_a_task_of_several_subsets_keeps_its_names_when_one_subset_runs():
    scores = sample_scores([("b", "single_line", "P0", 0), ("c", "single_line", "P1", 1)])
    figures = humaneval_metrics(k=1, per_subset=True)(scores)
    assert list(figures)[:3] == ["sample_weighted/pass@1", "stderr", "single_line/pass@1"]
    assert figures["sample_weighted/pass@1"] == figures["single_line/pass@1"] == 0.5


# An eval whose verdicts are known before it runs: three problems, tasks from three subsets, three
# epochs. Epoch 1 answers the canonical span; epoch 2 answers it with a blank line after it (still
# passes, exact only when stripped) on every other line-level task and garbage elsewhere; epoch 3
# answers canonically on every third task and garbage elsewhere. Garbage is a syntax error.
PROBLEMS = ("HumanEval/0", "HumanEval/2", "HumanEval/4")
GARBAGE = "<<< not python >>>"


def chosen_tasks():
    dataset = humaneval_infilling(subsets="single_line,multi_line,random_span_light").dataset
    chosen = []
    for subset, per_problem in (("single_line", 2), ("multi_line", 2), ("random_span_light", 1)):
        for problem in PROBLEMS:
            tasks = [
                s
                for s in dataset
                if s.metadata["subset"] == subset and s.metadata["problem_id"] == problem
            ]
            chosen += tasks[:per_problem]
    return chosen


def planned_answer(index: int, subset: str, canonical: str, epoch: int) -> tuple[str, bool]:
    """(answer, passes) for task `index` at `epoch`."""
    if epoch == 1:
        return canonical, True
    if epoch == 2:
        if index % 2 == 0:
            line_level = subset != "random_span_light"
            return (canonical + "\n" if line_level else canonical), True
        return GARBAGE, False
    if index % 3 == 0:
        return canonical, True
    return GARBAGE, False


@pytest.mark.docker
def test_reported_figures_equal_hand_computation(tmp_path, caplog):
    tasks = chosen_tasks()
    index_of = {sample.id: index for index, sample in enumerate(tasks)}

    @solver
    def scripted():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            answer, _ = planned_answer(
                index_of[state.sample_id], state.metadata["subset"], state.target.text, state.epoch
            )
            state.output = ModelOutput.from_content(model="scripted", content=answer)
            state.store.set(MIDDLE, answer)
            return state

        return solve

    [log] = inspect_eval(
        humaneval_infilling(subsets="single_line,multi_line,random_span_light", k="1,2,3,5"),
        model="none",
        solver=scripted(),
        sample_id=list(index_of),
        epochs=3,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    reported = {name: m.value for name, m in log.results.scores[0].metrics.items()}

    # Per task, by hand: c passes out of n = 3, and the share of exact answers.
    per_task = []
    for index, sample in enumerate(tasks):
        plans = [
            planned_answer(index, sample.metadata["subset"], sample.target, epoch)
            for epoch in (1, 2, 3)
        ]
        c = sum(passes for _, passes in plans)
        per_task.append(
            {
                "subset": sample.metadata["subset"],
                "problem": sample.metadata["problem_id"],
                **{f"pass@{k}": float(exact_pass_at_k(3, c, k)) for k in (1, 2, 3)},
                "exact_match": sum(a == sample.target for a, _ in plans) / 3,
                "exact_match_stripped": sum(a.strip() == sample.target.strip() for a, _ in plans)
                / 3,
            }
        )
    # The verdicts in the log are the planned ones.
    for sample in log.samples:
        _, passes = planned_answer(
            index_of[sample.id], sample.metadata["subset"], sample.target, sample.epoch
        )
        assert sample.scores["unit_tests"].value["passed"] == float(passes), sample.id

    figures = ["pass@1", "pass@2", "pass@3", "exact_match", "exact_match_stripped"]
    expected = {}

    def blend(prefix, weight_of):
        raw = [weight_of(t) for t in per_task]
        chosen = [(t, w / sum(raw)) for t, w in zip(per_task, raw, strict=True) if w > 0]
        for figure in figures:
            values = [t[figure] for t, _ in chosen]
            weights = [w for _, w in chosen]
            expected[prefix + figure] = sum(w * x for w, x in zip(weights, values, strict=True))
            expected[prefix + figure + "_stderr"] = by_hand_clustered_se(
                values, weights, [t["problem"] for t, _ in chosen]
            )

    subsets = ["multi_line", "random_span_light", "single_line"]
    for subset in subsets:
        blend(f"{subset}/", lambda t, s=subset: 1.0 if t["subset"] == s else 0.0)
    size = {s: sum(t["subset"] == s for t in per_task) for s in subsets}
    per_problem = {p: sum(t["problem"] == p for t in per_task) for p in PROBLEMS}
    blend("sample_weighted/", lambda t: 1.0)
    blend("mean_of_subsets/", lambda t: 1.0 / size[t["subset"]])
    blend("problem_macro/", lambda t: 1.0 / per_problem[t["problem"]])

    # The headline first, then its standard error under the name Inspect reads it by.
    assert list(reported)[:2] == ["sample_weighted/pass@1", "stderr"]
    expected["stderr"] = expected.pop("sample_weighted/pass@1_stderr")
    assert log.results.headline.metric == "sample_weighted/pass@1"
    assert set(reported) == set(expected)  # pass@5 needs 5 epochs: left out, not NaN
    told = [r.getMessage() for r in caplog.records if "will not be reported" in r.getMessage()]
    assert told == [
        (
            "pass@5 will not be reported: pass@k needs at least k epochs per task and this run "
            "has 3. Run with --epochs 5 to get pass@5."
        )
    ]
    for name, value in expected.items():
        assert reported[name] == pytest.approx(value, abs=1e-12), name
    # The blends differ here, so each is tested for what it is.
    assert (
        len(
            {
                round(expected[f"{b}/pass@1"], 9)
                for b in ("sample_weighted", "mean_of_subsets", "problem_macro")
            }
        )
        == 3
    )
