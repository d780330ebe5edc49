"""The FIM endpoints that take a suffix, through their local fakes
(heval_inspect.testing.fim_endpoints): real providers registered with Inspect, real `inspect eval`
runs and logs, real scoring in the sandbox. The fakes follow each endpoint's public reference and
refuse what the real ones refuse.
"""

import asyncio
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai import task_with
from inspect_ai.log import read_eval_log
from inspect_ai.model import GenerateConfig, Model, RetryDecision, get_model

from heval_inspect import fim_endpoints
from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.errors import EndpointError
from heval_inspect.fim_endpoints import DEFAULT_MAX_TOKENS, FimRequest, ServerError
from heval_inspect.inspect_internals import MODEL_INFO_LOOKUP_API_KEY
from heval_inspect.suffix_solvers import infill_suffix
from heval_inspect.tasks import TASKS, humaneval, humaneval_infilling
from heval_inspect.testing.fim_endpoints import (
    PROTOCOLS,
    ROUTES,
    SERVER_ERROR_MESSAGE,
    STYLES,
    FakeModel,
    FimEndpointFake,
)
from heval_inspect.testing.perfect_model import is_mid_line

ROOT = Path(__file__).parents[1]
# The provider of each protocol, and the environment variables its fake is named by.
PROVIDERS = {
    "mistral": ("mistral-fim/{model}", "MISTRAL_FIM"),
    "openai": ("openai-fim/fake/{model}", "FAKE"),
    "ollama": ("ollama-fim/{model}", "OLLAMA_FIM"),
    "llama_cpp": ("llama-cpp-fim/{model}", "LLAMA_CPP_FIM"),
}
KEY = "secret-key"


@pytest.fixture(autouse=True)
def probe_anew(monkeypatch):
    """Each test's fake gets its own probe: a provider probes a server once per process, and a
    later fake may be given an earlier one's port."""
    monkeypatch.setattr(fim_endpoints, "_PROBED", set())


@pytest.fixture(scope="module")
def selection() -> dict[str, list[dict]]:
    """A few tasks per subset, with empty, whitespace-only and mid-line random spans."""
    subsets = {name: load_official(file) for name, file in SUBSETS.items()}
    random_span = subsets["random_span"]
    chosen = {name: records[:2] for name, records in subsets.items()}
    chosen["random_span"] += [r for r in random_span if r["canonical_solution"] == ""][:2]
    chosen["random_span"] += [r for r in random_span if r["canonical_solution"].isspace()][:1]
    chosen["random_span"] += [r for r in random_span if is_mid_line(r)][:2]
    chosen["humaneval"] = load_official(HUMANEVAL)[:2]
    return chosen


def all_records() -> list[dict]:
    return [
        *(record for file in SUBSETS.values() for record in load_official(file)),
        *load_official(HUMANEVAL),
    ]


def model_name(protocol: str, model: str) -> str:
    return PROVIDERS[protocol][0].format(model=model)


def fresh_model(name: str) -> Model:
    """The model of this name made anew, with the base URL of this test's fake: Inspect keeps the
    models it makes by name, and one kept from an earlier test asks that test's fake, long gone,
    and retries without end."""
    return get_model(name, memoize=False)


def use_fake(monkeypatch, fake: FimEndpointFake) -> None:
    variables = PROVIDERS[fake.protocol][1]
    monkeypatch.setenv(f"{variables}_BASE_URL", fake.url)
    monkeypatch.setenv(f"{variables}_API_KEY", KEY)


def selected_tasks(selection, **task_args):
    ids = {record["task_id"] for records in selection.values() for record in records}
    tasks = [humaneval_infilling(**task_args), humaneval(**task_args)]
    for task in tasks:
        task.dataset = task.dataset.filter(lambda sample: sample.id in ids)
    return tasks


def pass_at_1(log) -> dict[str, float]:
    metrics = log.results.scores[0].metrics
    names = [f"{name}/" for name in SUBSETS] if "infilling" in log.eval.task else [""]
    return {name or "humaneval": metrics[f"{name}pass@1"].value for name in names}


def verdicts(log) -> dict[str, float]:
    return {str(sample.id): sample.scores["unit_tests"].value["passed"] for sample in log.samples}


# -- the fakes refuse what the real endpoints refuse ---------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fakes_refuse_a_field_the_endpoint_does_not_accept(protocol):
    record = {"task_id": "t", "prompt": "a = ", "suffix": "\n", "canonical_solution": "1"}
    bodies = {
        "mistral": {"model": "perfect", "prompt": "a = ", "suffix": "\n"},
        "openai": {"model": "perfect", "prompt": "a = ", "suffix": "\n"},
        "ollama": {"model": "perfect", "prompt": "a = ", "suffix": "\n", "stream": False},
        "llama_cpp": {"input_prefix": "a = ", "input_suffix": "\n"},
    }
    with FimEndpointFake(protocol, [record]) as fake:
        route = fake.url.removesuffix("/v1") + ROUTES[protocol]
        good = httpx.post(route, json=bodies[protocol])
        assert good.status_code == 200, good.text
        # A field of another protocol, a misspelt one, and one of the wrong type.
        foreign = {"seed": 5} if protocol == "mistral" else {"random_seed": 5}
        for extra in (foreign, {"max_token": 5}, {"suffix": 3, "input_suffix": 3}):
            bad = httpx.post(route, json=bodies[protocol] | extra)
            assert 400 <= bad.status_code < 500, (extra, bad.text)
        if protocol == "ollama":
            bad = httpx.post(route, json=bodies[protocol] | {"options": {"max_tokens": 5}})
            assert bad.status_code == 400


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_generation_settings_reach_the_request_under_the_endpoints_names(protocol, monkeypatch):
    record = {
        "task_id": "t",
        "prompt": "x = [\n  ",
        "suffix": "  \n]\n",
        "canonical_solution": "1,",
    }
    with FimEndpointFake(protocol, [record]) as fake:
        use_fake(monkeypatch, fake)
        config = GenerateConfig(
            max_tokens=77, temperature=0.25, top_p=0.5, seed=7, stop_seqs=["\nclass"]
        )
        model = get_model(model_name(protocol, "perfect"), config=config, memoize=False)
        request = FimRequest(prefix=record["prompt"], suffix=record["suffix"])
        output = model_generate(model, request)
        assert output.completion == "1,"
        assert output.usage.input_tokens > 0 and output.usage.output_tokens > 0
        [body] = fake.bodies()
    sampling = {"temperature": 0.25, "top_p": 0.5, "stop": ["\nclass"]}
    expected = {
        "mistral": {"model": "perfect", "prompt": "x = [\n  ", "suffix": "  \n]\n",
                    "max_tokens": 77, "random_seed": 7, **sampling},
        "openai": {"model": "perfect", "prompt": "x = [\n  ", "suffix": "  \n]\n",
                   "max_tokens": 77, "seed": 7, **sampling},
        "ollama": {"model": "perfect", "prompt": "x = [\n  ", "suffix": "  \n]\n",
                   "options": {"num_predict": 77, "seed": 7, **sampling}, "stream": False},
        "llama_cpp": {"input_prefix": "x = [\n  ", "input_suffix": "  \n]\n", "n_predict": 77,
                      "seed": 7, **sampling},
    }  # fmt: skip
    assert body == expected[protocol]


def model_generate(model, request: FimRequest):
    import asyncio

    return asyncio.run(model.generate([request.as_message()]))


# -- errors: one line, before any sample runs ------------------------------------------------------

ONE_RECORD = [{"task_id": "t", "prompt": "a = ", "suffix": "\n", "canonical_solution": "1"}]


def refusal(
    protocol, monkeypatch, models=None, model="perfect", key=KEY, fault=None, **environment
):
    with FimEndpointFake(
        protocol, ONE_RECORD, models or {"perfect": FakeModel()}, KEY, fault=fault
    ) as fake:
        use_fake(monkeypatch, fake)
        monkeypatch.setenv(f"{PROVIDERS[protocol][1]}_API_KEY", key)
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        with pytest.raises(EndpointError) as raised:
            get_model(model_name(protocol, model), memoize=False)
    message = str(raised.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_model_that_refuses_the_suffix_is_one_line_with_the_servers_words(protocol, monkeypatch):
    message = refusal(
        protocol, monkeypatch, {"coder": FakeModel(behaviour="refuses_suffix")}, "coder"
    )
    said = {"mistral": "does not support FIM", "openai": "suffix is not currently supported",
            "ollama": "does not support insert",
            "llama_cpp": "Infill is not supported"}  # fmt: skip
    assert said[protocol] in message and ROUTES[protocol].rsplit("/", 1)[1] in message


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_endpoint_that_ignores_the_suffix_is_one_line(protocol, monkeypatch):
    message = refusal(
        protocol, monkeypatch, {"base": FakeModel(behaviour="ignores_suffix")}, "base"
    )
    assert "ignores the suffix" in message and "-M probe=false" in message


@pytest.mark.parametrize("protocol", ["mistral", "openai", "ollama"])
def test_a_model_the_server_does_not_have_is_one_line_with_the_servers_words(protocol, monkeypatch):
    message = refusal(protocol, monkeypatch, model="no-such-model")
    assert "no-such-model" in message and "check the model name" in message


@pytest.mark.parametrize("protocol", ["mistral", "openai"])
def test_a_wrong_key_is_one_line(protocol, monkeypatch):
    message = refusal(protocol, monkeypatch, key="wrong")
    assert "401" in message and f"check {PROVIDERS[protocol][1]}_API_KEY" in message


def test_a_missing_key_or_base_url_is_one_line_naming_the_variable(monkeypatch):
    for variable in ("MISTRAL_FIM_API_KEY", "MISTRAL_API_KEY", "FAKE_API_KEY", "FAKE_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(EndpointError, match="set MISTRAL_FIM_API_KEY to your API key"):
        get_model("mistral-fim/codestral-latest", memoize=False)
    with pytest.raises(EndpointError, match=r"set FAKE_BASE_URL \(or --model-base-url\)"):
        get_model("openai-fim/fake/model", memoize=False)
    with pytest.raises(EndpointError, match="name the service before the model"):
        get_model("openai-fim/gpt-3.5-turbo-instruct", memoize=False)
    monkeypatch.setenv("OLLAMA_FIM_BASE_URL", "http://127.0.0.1:9")  # nothing listens
    with pytest.raises(EndpointError, match="no server answers at http://127.0.0.1:9"):
        get_model("ollama-fim/qwen2.5-coder", memoize=False)


@pytest.mark.data
def test_the_cli_prints_one_line_and_runs_no_sample(monkeypatch, tmp_path):
    with FimEndpointFake("openai", ONE_RECORD, key=KEY) as fake:
        environment = os.environ | {"FAKE_BASE_URL": fake.url, "FAKE_API_KEY": KEY}
        command = [sys.executable, "-m", "inspect_ai", "eval",
                   "heval_inspect/humaneval_single_line_infilling",
                   "--model", "openai-fim/fake/no-such-model", "--limit", "1",
                   "--log-dir", str(tmp_path)]  # fmt: skip
        ran = subprocess.run(
            command, check=False, capture_output=True, text=True, env=environment, timeout=300
        )
        assert ran.returncode != 0
        assert "Traceback" not in ran.stderr + ran.stdout
        assert "The model `no-such-model` does not exist" in ran.stderr + ran.stdout
        assert fake.bodies() == []  # only the probe reached the server
    assert not list(tmp_path.glob("*.eval"))


# -- the same task, the same scoring --------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.data
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_perfect_model_scores_1_on_every_subset_and_humaneval(
    protocol, selection, monkeypatch, tmp_path
):
    records = [record for records in selection.values() for record in records]
    with FimEndpointFake(protocol, records, key=KEY) as fake:
        use_fake(monkeypatch, fake)
        model = model_name(protocol, "perfect")
        logs = inspect_eval(
            selected_tasks(selection),
            model=fresh_model(model),
            log_dir=str(tmp_path),
            display="none",
        )
        bodies = fake.bodies()
    for log in logs:
        assert log.status == "success", log.error and log.error.message
        log = read_eval_log(log.location, resolve_attachments=True)
        assert set(pass_at_1(log).values()) == {1.0}, pass_at_1(log)
        metrics = log.results.scores[0].metrics
        assert all(m.value == 1.0 for name, m in metrics.items() if name.endswith("exact_match"))
        assert log.plan.steps[0].solver == "heval_inspect/infill"
        # Token usage, in the log's totals and in each sample.
        usage = log.stats.model_usage[model]
        assert usage.input_tokens > 0 and usage.output_tokens > 0
        for sample in log.samples:
            assert sample.model_usage[model].input_tokens > 0
            # The request the model got, in the log: the sample's prefix and suffix, unchanged.
            [event] = [event for event in sample.events if event.event == "model"]
            record = next(r for r in records if r["task_id"] == sample.id)
            fields = (
                ("input_prefix", "input_suffix")
                if protocol == "llama_cpp"
                else ("prompt", "suffix")
            )
            assert [event.call.request[f] for f in fields] == [
                record["prompt"],
                record.get("suffix", ""),
            ]
    # One request per task, each with the task's texts as they are.
    assert len(bodies) == len({record["task_id"] for record in records})


@pytest.mark.docker
@pytest.mark.data
def test_the_suffix_solver_named_on_its_own_asks_the_endpoint(selection, monkeypatch, tmp_path):
    """`--solver heval_inspect/infill_suffix`, as a user names it, rather than through `infill`."""
    records = selection["single_line"]
    with FimEndpointFake("ollama", records, {"named-solver": FakeModel()}, KEY) as fake:
        use_fake(monkeypatch, fake)
        tasks = selected_tasks({"single_line": records})
        [log] = inspect_eval(
            tasks[0],
            model=fresh_model(model_name("ollama", "named-solver")),
            solver=infill_suffix(),
            log_dir=str(tmp_path),
            display="none",
        )
        bodies = fake.bodies()
    assert log.status == "success", log.error and log.error.message
    assert log.plan.steps[0].solver == "heval_inspect/infill_suffix"
    assert log.results.scores[0].metrics["single_line/pass@1"].value == 1.0
    assert sorted(body["prompt"] for body in bodies) == sorted(r["prompt"] for r in records)


@pytest.mark.docker
@pytest.mark.data
@pytest.mark.parametrize("style", [style for style in STYLES if style != "perfect"])
def test_imperfect_answers_get_the_verdicts_the_raw_fim_path_gives(
    style, selection, monkeypatch, tmp_path
):
    """Each family's answers in this style against the raw StarCoder FIM path's, whose server
    writes the same text and then its stop token."""
    records = [record for records in selection.values() for record in records]
    fakes = {protocol: FimEndpointFake(protocol, records, {style: FakeModel(style)}, KEY)
             for protocol in PROTOCOLS}  # fmt: skip
    for fake in fakes.values():
        fake.__enter__()
        use_fake(monkeypatch, fake)
    try:
        tasks = [task_with(task, model=fresh_model(model_name(protocol, style)))
                 for protocol in PROTOCOLS for task in selected_tasks(selection)]  # fmt: skip
        tasks += [task_with(task, model=fresh_model(f"openai-api-completions/fake/{style}"))
                  for task in selected_tasks(selection, fim_format="starcoder")]  # fmt: skip
        logs = inspect_eval(tasks, log_dir=str(tmp_path), display="none", max_tasks=4)
    finally:
        for fake in fakes.values():
            fake.__exit__(None, None, None)
    assert all(log.status == "success" for log in logs)
    raw = {}
    for log in logs[-2:]:
        raw |= verdicts(log)
    tasks_selected = len({record["task_id"] for record in records})
    assert len(raw) == tasks_selected
    for log in logs[:-2]:
        assert verdicts(log) == {task_id: raw[task_id] for task_id in verdicts(log)}, log.eval.model
    passed = sum(raw.values())
    # Not a test that cannot fail: the styles' verdicts are what their middles make of them.
    expected = {"past_the_gap": tasks_selected, "repeats_suffix": None, "empty": None}[style]
    if expected is not None:
        assert passed == expected
    else:
        assert 0 < passed < tasks_selected / 2, passed


# -- the README's commands, as written -------------------------------------------------------------


def readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- suffix-endpoints -->\n```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("inspect eval ")]


def test_the_readme_has_a_command_for_every_provider():
    providers = {re.search(r"--model (\S+?)/", command)[1] for command in readme_commands()}
    assert providers == {"mistral-fim", "openai-fim", "ollama-fim", "llama-cpp-fim"}


@pytest.mark.docker
@pytest.mark.data
def test_the_readme_commands_run_as_written_against_the_fakes(tmp_path):
    records = all_records()
    commands = readme_commands()
    models = [re.search(r"--model (\S+)", command)[1] for command in commands]
    served = {name.split("/")[-1]: FakeModel() for name in models}
    fakes = [FimEndpointFake(protocol, records, served, KEY) for protocol in PROTOCOLS]
    # `inspect` as installed beside this interpreter (the venv's), as on the user's PATH.
    environment = os.environ | {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for fake in fakes:
        fake.__enter__()
        variables = PROVIDERS[fake.protocol][1]
        environment |= {f"{variables}_BASE_URL": fake.url, f"{variables}_API_KEY": KEY}
    # The variables the README names: the fakes stand for the services.
    environment |= {"DEEPSEEK_BASE_URL": fakes[1].url, "DEEPSEEK_API_KEY": KEY,
                    "MISTRAL_FIM_API_KEY": KEY}  # fmt: skip
    try:
        for command in commands:
            log_dir = tmp_path / str(commands.index(command))
            argv = [*shlex.split(command), "--limit", "2", "--log-dir", str(log_dir)]
            ran = subprocess.run(
                argv, check=False, capture_output=True, text=True, env=environment, timeout=600
            )
            assert ran.returncode == 0, (command, ran.stderr[-2000:])
            [log_file] = log_dir.glob("*.eval")
            log = read_eval_log(str(log_file))
            metrics = log.results.scores[0].metrics.values()  # nan: a subset --limit left out
            figures = [m.value for m in metrics if m.name.endswith("pass@1") and m.value == m.value]
            assert log.status == "success" and figures and set(figures) == {1.0}, command
    finally:
        for fake in fakes:
            fake.__exit__(None, None, None)
    # Each fake got its endpoint's requests, the settings of the command line included.
    assert [body["options"]["temperature"] for body in fakes[2].bodies()] == [0, 0]
    assert [body["n_predict"] for body in fakes[3].bodies()] == [512, 512]
    assert all(body["max_tokens"] == DEFAULT_MAX_TOKENS for body in fakes[0].bodies())


# -- the sweep -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.data
def test_a_perfect_model_scores_1_on_40_tasks_of_every_subset_per_family(monkeypatch, tmp_path):
    records = all_records()
    fakes = [FimEndpointFake(protocol, records, key=KEY) for protocol in PROTOCOLS]
    for fake in fakes:
        fake.__enter__()
        use_fake(monkeypatch, fake)
    try:
        names = ["humaneval_single_line_infilling", "humaneval_multi_line_infilling",
                 "humaneval_random_span_infilling", "humaneval_random_span_infilling_light",
                 "humaneval"]  # fmt: skip
        tasks = [task_with(TASKS[name](), model=fresh_model(model_name(protocol, "perfect")))
                 for protocol in PROTOCOLS for name in names]  # fmt: skip
        logs = inspect_eval(tasks, limit=40, log_dir=str(tmp_path), display="none", max_tasks=5)
    finally:
        for fake in fakes:
            fake.__exit__(None, None, None)
    for log in logs:
        usage = log.stats.model_usage[log.eval.model]
        score = log.results.scores[0].metrics["pass@1"].value  # one subset per task
        print(log.eval.model, log.eval.task, f"pass@1 {score:.3f}", len(log.samples),
              f"tokens in {usage.input_tokens} out {usage.output_tokens}")  # fmt: skip
        assert log.status == "success" and len(log.samples) == 40
        assert score == 1.0


# -- what the services really answer, and faults ------------------------------------------------


def test_a_provider_built_for_inspects_model_lookup_sends_nothing(monkeypatch):
    # Inspect builds a provider with a placeholder key only to look its model up; a keyless
    # server would run real generations for it, a keyed one see a bogus key.
    with FimEndpointFake("ollama", ONE_RECORD) as fake:
        monkeypatch.setenv("OLLAMA_FIM_BASE_URL", fake.url)
        monkeypatch.delenv("OLLAMA_FIM_API_KEY", raising=False)
        get_model("ollama-fim/perfect", api_key=MODEL_INFO_LOOKUP_API_KEY, memoize=False)
        assert fake.requests == []
        # The real ones probe once per run (a suffix and none), however many Inspect makes.
        for _ in range(3):
            get_model("ollama-fim/perfect", memoize=False)
        assert len(fake.requests) == 2


def ask(protocol: str, monkeypatch, fake: FimEndpointFake, max_tokens: int):
    """One generation of ONE_RECORD's gap through the provider, as a sample asks it."""
    use_fake(monkeypatch, fake)
    model = fresh_model(model_name(protocol, "perfect"))
    request = FimRequest(prefix=ONE_RECORD[0]["prompt"], suffix=ONE_RECORD[0]["suffix"])
    return asyncio.run(model.generate([request.as_message()], config=GenerateConfig(
        max_tokens=max_tokens, max_retries=0)))  # fmt: skip


LONG = [{"task_id": "t", "prompt": "a = ", "suffix": "\n", "canonical_solution": "1 + 2 + 3 + 4"}]


@pytest.mark.parametrize("fields", ["current", "older"])
def test_llama_cpp_says_why_it_stopped_in_current_and_older_fields(fields, monkeypatch):
    with FimEndpointFake("llama_cpp", LONG, key=KEY, fields=fields) as fake:
        whole = ask("llama_cpp", monkeypatch, fake, 100)
        cut = ask("llama_cpp", monkeypatch, fake, 2)
    assert (whole.completion, whole.stop_reason) == ("1 + 2 + 3 + 4", "stop")
    assert cut.stop_reason == "max_tokens" and cut.completion == "1 "
    assert whole.usage is not None and whole.usage.output_tokens > 0


def test_an_ollama_server_that_streams_is_read_whole(monkeypatch):
    with FimEndpointFake("ollama", LONG, key=KEY, streams=True) as fake:
        output = ask("ollama", monkeypatch, fake, 100)
    assert (output.completion, output.stop_reason) == ("1 + 2 + 3 + 4", "stop")
    assert output.usage is not None and output.usage.input_tokens > 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_answer_that_is_not_json_says_which_server_sent_it(protocol, monkeypatch):
    message = refusal(protocol, monkeypatch, fault="malformed")
    assert "is not the JSON its API documents" in message and ROUTES[protocol] in message


def fails_after_the_probe(protocol, monkeypatch, fault, error):
    """The provider (its probe answered) and the `error` its next generation raises, from a
    fake whose every later request fails with `fault`."""
    with FimEndpointFake(protocol, ONE_RECORD, key=KEY, fault=fault, fault_after=2) as fake:
        use_fake(monkeypatch, fake)
        model = fresh_model(model_name(protocol, "perfect"))
        request = FimRequest(prefix="a = ", suffix="\n")
        with pytest.raises(error) as raised:
            asyncio.run(model.api.generate([request.as_message()], [], "none", GenerateConfig()))
    return model, raised.value


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_server_error_says_the_servers_words_and_is_retried(protocol, monkeypatch):
    model, error = fails_after_the_probe(protocol, monkeypatch, "server_error", ServerError)
    message = str(error)
    assert SERVER_ERROR_MESSAGE in message and "500" in message and ROUTES[protocol] in message
    assert model.api.should_retry(error) == RetryDecision.transient()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_key_refused_mid_run_ends_the_sample_with_one_line(protocol, monkeypatch):
    _, error = fails_after_the_probe(protocol, monkeypatch, "key_refused", EndpointError)
    message = str(error)
    assert "\n" not in message and "401" in message and "the key was refused" in message


def generate_with_retries(protocol, monkeypatch, fault: str | None, max_retries: int):
    """The error one generation raises through Inspect's own retries (Model.generate), from a
    fake whose every request after the probe fails with `fault`, or that is gone (None)."""
    request = FimRequest(prefix="a = ", suffix="\n")
    config = GenerateConfig(max_retries=max_retries)
    with FimEndpointFake(protocol, ONE_RECORD, key=KEY, fault=fault, fault_after=2) as fake:
        use_fake(monkeypatch, fake)
        model = fresh_model(model_name(protocol, "perfect"))
        if fault is not None:
            with pytest.raises(Exception) as raised:
                asyncio.run(model.generate([request.as_message()], config=config))
            return raised.value
    with pytest.raises(Exception) as raised:  # the server went away after the probe
        asyncio.run(model.generate([request.as_message()], config=config))
    return raised.value


# Inspect's own end of retries is tenacity's RetryError, which names neither the server nor its
# words: the last attempt the run allows ends the sample with them instead. With one retry, the
# count runs across Inspect's calls of the provider (a wait of 3 to 6 s between them).
@pytest.mark.parametrize(
    "protocol, retries, tried",
    [("ollama", 0, "tried once"), ("mistral", 1, "tried 2 times in")],
)
def test_a_server_error_that_persists_ends_the_sample_with_the_servers_words(
    protocol, retries, tried, monkeypatch
):
    error = generate_with_retries(protocol, monkeypatch, "server_error", retries)
    assert isinstance(error, EndpointError), repr(error)
    message = str(error)
    assert SERVER_ERROR_MESSAGE in message and "500" in message and ROUTES[protocol] in message
    assert tried in message and "--max-retries" in message and "\n" not in message


def test_a_server_gone_mid_run_ends_the_sample_naming_it(monkeypatch):
    error = generate_with_retries("llama_cpp", monkeypatch, None, 0)
    assert isinstance(error, EndpointError), repr(error)
    assert "no answer from" in str(error) and ROUTES["llama_cpp"] in str(error)


@pytest.mark.data
def test_eval_set_runs_a_task_whose_solver_asks_the_model(tmp_path):
    # `inspect eval-set` lists each task's plan for its display with no model active (`none`):
    # the tasks' check for `--model none` must not stop such a run. Canonical answers only, so
    # the local sandbox runs them.
    with FimEndpointFake("ollama", load_official(HUMANEVAL)[:2], key=KEY) as fake:
        ran = subprocess.run(
            [str(Path(sys.executable).with_name("inspect")), "eval-set", "heval_inspect/humaneval",
             "--model", "ollama-fim/perfect", "-T", "sandbox=local", "--limit", "2",
             "--log-dir", str(tmp_path), "--retry-attempts", "0", "--display", "none"],
            env=os.environ | {"OLLAMA_FIM_BASE_URL": fake.url, "OLLAMA_FIM_API_KEY": KEY},
            capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    [log_file] = tmp_path.glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success" and log.results.scores[0].metrics["pass@1"].value == 1.0
