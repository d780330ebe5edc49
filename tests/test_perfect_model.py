"""A perfect model over HTTP scores 1.0: real providers, real solver and extraction, real sandbox.

The server (`heval_inspect.testing.perfect_model`) answers on 127.0.0.1 as OpenAI's and Anthropic's
APIs do, in every chat style and every FIM family's raw form; Inspect's own `openai`, `anthropic`,
`openai-api-completions` and `vllm-completions` providers talk to it. A selection of tasks covers
the four infilling subsets and HumanEval, empty and whitespace-only random spans, and spans that
start and end mid-line. The full-dataset run is benchmarks/perfect_model.py.
"""

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai import task_with
from inspect_ai.model import get_model

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.prompts import FIM_FORMATS
from heval_inspect.tasks import FIM_MAX_TOKENS, humaneval, humaneval_infilling
from heval_inspect.testing.answers import CHAT_STYLES
from heval_inspect.testing.perfect_model import PerfectModelServer, is_mid_line

pytestmark = pytest.mark.docker

# Every style through OpenAI's chat completions API; a few through its Responses API (what
# Inspect uses for OpenAI models it takes for current ones) and Anthropic's messages API.
RESPONSES_STYLES = ["prose_fence", "repeated_prefix_line", "no_fence"]
ANTHROPIC_STYLES = ["bare_fence", "think_fence", "whole_function", "natural_fence"]


@pytest.fixture(scope="module")
def selection() -> dict[str, list[dict]]:
    """A few tasks per subset, with the random-span cases that trip extraction."""
    subsets = {name: load_official(file) for name, file in SUBSETS.items()}
    random_span = subsets["random_span"]
    chosen = {name: records[:2] for name, records in subsets.items()}
    chosen["random_span"] += [r for r in random_span if r["canonical_solution"] == ""][:3]
    chosen["random_span"] += [r for r in random_span if r["canonical_solution"].isspace()][:2]
    chosen["random_span"] += [r for r in random_span if is_mid_line(r)][:3]
    chosen["random_span_light"] += [r for r in subsets["random_span_light"] if is_mid_line(r)][:2]
    chosen["humaneval"] = load_official(HUMANEVAL)[:3]
    return chosen


@pytest.fixture(scope="module")
def running_server(selection):
    with PerfectModelServer([r for records in selection.values() for r in records]) as running:
        yield running


@pytest.fixture
def server(running_server):
    running_server.requests.clear()  # each test sees the requests of its own evals
    return running_server


def selected_tasks(selection, fim_format=None):
    """The infilling task (all four subsets) and HumanEval, cut down to the selection."""
    ids = {record["task_id"] for records in selection.values() for record in records}
    tasks = [humaneval_infilling(fim_format=fim_format), humaneval(fim_format=fim_format)]
    for task in tasks:
        task.dataset = task.dataset.filter(lambda sample: sample.id in ids)
    return tasks


def assert_perfect(log, exact=True):
    assert log.status == "success", (log.eval.model, log.error and log.error.message)
    metrics = log.results.scores[0].metrics
    prefixes = [f"{name}/" for name in SUBSETS] if "infilling" in log.eval.task else [""]
    for prefix in prefixes:
        assert metrics[f"{prefix}pass@1"].value == 1.0, (log.eval.model, prefix)
        if exact:
            assert metrics[f"{prefix}exact_match"].value == 1.0, (log.eval.model, prefix)
    assert log.samples


def test_selection_covers_the_hard_random_spans(selection):
    spans = [r["canonical_solution"] for r in selection["random_span"]]
    assert "" in spans and any(s.isspace() for s in spans)
    assert sum(is_mid_line(r) for r in selection["random_span"]) >= 3


def test_perfect_chat_model_scores_1_in_every_style_through_openai_and_anthropic(
    selection, server, tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "perfect")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "perfect")
    # Made anew (memoize=False), each with this server's URL, not one kept from an earlier test.
    models = [
        get_model(f"openai/{style}", responses_api=False, memoize=False) for style in CHAT_STYLES
    ]
    models += [get_model(f"openai/{style}", memoize=False) for style in RESPONSES_STYLES]
    models += [get_model(f"anthropic/{style}", memoize=False) for style in ANTHROPIC_STYLES]
    logs = inspect_eval(
        selected_tasks(selection),
        model=models,
        log_dir=str(tmp_path),
        display="none",
        max_tasks=8,
    )
    assert len(logs) == 2 * len(models)
    for log in logs:
        style = log.eval.model.split("/", 1)[1]
        assert_perfect(log, exact=CHAT_STYLES[style].exact)
    paths = {path for path, _ in server.requests}
    assert paths == {"/v1/chat/completions", "/v1/responses", "/v1/messages"}


def test_perfect_fim_model_scores_1_in_every_family_through_raw_completions(
    selection, server, tmp_path, monkeypatch
):
    monkeypatch.setenv("PERFECT_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("PERFECT_API_KEY", "perfect")
    # Each family's tasks with a model of that family (it ends its middle with its own stop).
    tasks = [
        task_with(task, model=get_model(f"openai-api-completions/perfect/{family}", memoize=False))
        for family in FIM_FORMATS
        for task in selected_tasks(selection, family)
    ]
    logs = inspect_eval(tasks, log_dir=str(tmp_path), display="none", max_tasks=8)
    assert len(logs) == 2 * len(FIM_FORMATS)
    for log in logs:
        assert_perfect(log)
    # Every request asked for more than the providers' default of 1 token, with the stop tokens
    # of its family.
    completions = [body for path, body in server.requests if path == "/v1/completions"]
    tasks_selected = {record["task_id"] for records in selection.values() for record in records}
    assert len(completions) == len(FIM_FORMATS) * len(tasks_selected)
    for body in completions:
        assert body["stop"] == list(FIM_FORMATS[body["model"]].stop)
        assert body["max_tokens"] == FIM_MAX_TOKENS


def test_perfect_fim_model_scores_1_through_vllm_completions(
    selection, server, tmp_path, monkeypatch
):
    monkeypatch.setenv("VLLM_BASE_URL", f"{server.url}/v1")
    logs = inspect_eval(
        selected_tasks(selection, "deepseek"),
        model=get_model("vllm-completions/deepseek-ai/deepseek-coder-1.3b-base", memoize=False),
        log_dir=str(tmp_path),
        display="none",
    )
    for log in logs:
        assert_perfect(log)
    [(path, body), *_] = server.requests
    assert path == "/v1/completions" and body["model"] == "deepseek-ai/deepseek-coder-1.3b-base"
    assert body["max_tokens"] == FIM_MAX_TOKENS and body["stop"] == list(
        FIM_FORMATS["deepseek"].stop
    )
