"""Chat answers laid out as real chat models lay them out, end to end (issue 47): their own imports
and helpers before the function, other parameter names, another indentation, several fenced
blocks, and all of these at once (`heval_inspect.testing.chat_layouts`), over HumanEval and every
infilling subset. The perfect-model server answers in each layout, right and wrong; Inspect's
`openai` provider asks it, and the package's solver, extraction and scorer judge the answers in
the real sandbox: every right answer passes, every wrong one fails.
"""

from collections import Counter

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.schema import PASSED
from heval_inspect.testing.chat_layouts import LAYOUTS, layout_tasks
from heval_inspect.testing.chat_layouts import corpus as layout_corpus
from heval_inspect.testing.perfect_model import PerfectModelServer

# Tasks per layout and kind: this many HumanEval problems, and this many tasks of each subset.
HUMANEVAL_PROBLEMS = 40
SUBSET_TASKS = 10


@pytest.fixture(scope="module")
def corpus() -> dict[tuple[str, bool], list[dict]]:
    """The tasks each layout answers, right and wrong: where it applies, spread over problems."""
    files = {"humaneval": HUMANEVAL, **SUBSETS}
    per_file = dict.fromkeys(SUBSETS, SUBSET_TASKS) | {"humaneval": HUMANEVAL_PROBLEMS}
    return layout_corpus({name: load_official(file) for name, file in files.items()}, per_file)


@pytest.mark.data
def test_the_corpus_covers_each_class_on_humaneval_and_every_subset(corpus):
    problems: dict[int, set[str]] = {}
    for (layout, _), tasks in corpus.items():
        for issue_class in LAYOUTS[layout].classes:
            problems.setdefault(issue_class, set()).update(
                record["task_id"].split("/")[-2 if "Infilling" in record["task_id"] else -1]
                for record in tasks
            )
    assert {issue_class: len(ids) >= 40 for issue_class, ids in problems.items()} == {
        1: True,
        2: True,
        3: True,
        4: True,
    }
    files = Counter(
        record["task_id"].split("/")[0]
        for (layout, right), tasks in corpus.items()
        for record in tasks
    )
    assert set(files) == {
        "HumanEval",
        "SingleLineInfilling",
        "MultiLineInfilling",
        "RandomSpanInfilling",
        "RandomSpanInfillingLight",
    }


@pytest.mark.docker
@pytest.mark.slow
def test_right_answers_pass_and_wrong_ones_fail_in_every_layout(corpus, tmp_path, monkeypatch):
    every = {record["task_id"]: record for tasks in corpus.values() for record in tasks}
    with PerfectModelServer(list(every.values()), tuple(LAYOUTS)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "perfect")
        tasks = layout_tasks(corpus)
        logs = inspect_eval(tasks, log_dir=str(tmp_path), display="none", max_tasks=4)
    wrong = {}
    for log in logs:
        assert log.status == "success", (log.eval.model, log.error and log.error.message)
        expected = 1.0 if log.eval.model.endswith(".right") else 0.0
        for sample in log.samples or []:
            passed = next(iter((sample.scores or {}).values())).value[PASSED]  # type: ignore[index]
            if passed != expected:
                wrong[log.eval.model, sample.id] = passed
    assert wrong == {}
    assert sum(len(log.samples or []) for log in logs) == sum(len(t) for t in corpus.values())
