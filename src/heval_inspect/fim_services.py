"""The four services whose fill-in-the-middle endpoints take the suffix themselves, one provider
per wire protocol (what each sends and how it reads the answer; the rest is fim_endpoints.py's),
registered with Inspect when the package is imported:

| provider | endpoint | base URL variable (default) | key variable |
| --- | --- | --- | --- |
| `mistral-fim/MODEL` | Mistral `POST /v1/fim/completions` | MISTRAL_FIM_BASE_URL (api.mistral.ai) | MISTRAL_FIM_API_KEY, else MISTRAL_API_KEY (required) |
| `openai-fim/SERVICE/MODEL` | OpenAI-compatible `POST /completions` with `suffix` | SERVICE_BASE_URL (known for openai, deepseek) | SERVICE_API_KEY (required) |
| `ollama-fim/MODEL` | Ollama `POST /api/generate` with `suffix` | OLLAMA_FIM_BASE_URL (localhost:11434) | OLLAMA_FIM_API_KEY (optional) |
| `llama-cpp-fim/MODEL` | llama.cpp server `POST /infill` | LLAMA_CPP_FIM_BASE_URL (localhost:8080) | LLAMA_CPP_FIM_API_KEY (optional) |
"""

import json
from collections.abc import Callable
from typing import Any, ClassVar

import httpx
from inspect_ai.model import GenerateConfig, StopReason, modelapi

from .errors import EndpointError
from .fim_endpoints import Answer, FimRequest, SuffixFimAPI

# The services' words for why a completion ended: OpenAI's and DeepSeek's finish_reason (stop,
# length), Mistral's (also model_length: the model's context), Ollama's done_reason, llama.cpp's
# stop_type (eos, word: a stop string; limit; none).
STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "eos": "stop",
    "word": "stop",
    "length": "max_tokens",
    "limit": "max_tokens",
    "model_length": "model_length",
}


def _stop_reason(reason: str | None) -> StopReason:
    return STOP_REASONS.get(reason or "", "unknown")


def _completions_body(
    model: str, request: FimRequest, config: GenerateConfig, seed: str
) -> dict[str, Any]:
    """A request in OpenAI's completions shape (Mistral's FIM and OpenAI-compatible endpoints),
    the seed under the service's own name."""
    return {
        "model": model,
        "prompt": request.prefix,
        "suffix": request.suffix,
        "max_tokens": config.max_tokens,
        **_sampling(config, seed=seed),
    }


def _completions_answer(
    response: dict[str, Any], text_of: Callable[[dict[str, Any]], str | None]
) -> Answer:
    """An answer in OpenAI's completions shape: its first choice's text (where the service puts
    it), why it stopped, and the usage."""
    choice, usage = response["choices"][0], response.get("usage") or {}
    return Answer(
        text=text_of(choice) or "",
        stop_reason=_stop_reason(choice.get("finish_reason")),
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
    )


def _sampling(config: GenerateConfig, seed: str) -> dict[str, Any]:
    """The sampling settings given, under the names most endpoints use."""
    settings = {
        "temperature": config.temperature,
        "top_p": config.top_p,
        seed: config.seed,
        "stop": config.stop_seqs,
    }
    return {name: value for name, value in settings.items() if value is not None}


@modelapi("mistral-fim")
class MistralFimAPI(SuffixFimAPI):
    """Mistral's FIM completions (Codestral): https://docs.mistral.ai/api/#tag/fim."""

    name = "mistral-fim"
    path = "/fim/completions"
    default_base_url = "https://api.mistral.ai/v1"
    key_required = True

    def environment(self, model_name: str) -> tuple[str, list[str]]:
        return "MISTRAL_FIM_BASE_URL", ["MISTRAL_FIM_API_KEY", "MISTRAL_API_KEY"]

    def body(self, request: FimRequest, config: GenerateConfig) -> dict[str, Any]:
        return _completions_body(self.served_model, request, config, seed="random_seed")

    def answer(self, response: dict[str, Any]) -> Answer:
        return _completions_answer(response, lambda choice: choice["message"]["content"])


@modelapi("openai-fim")
class OpenAIFimAPI(SuffixFimAPI):
    """An OpenAI-compatible `/completions` endpoint that takes `suffix`: OpenAI's
    gpt-3.5-turbo-instruct, DeepSeek's beta endpoint, Ollama's /v1, ... The model name starts
    with the service, which names the variables (`openai-fim/deepseek/deepseek-chat`:
    DEEPSEEK_BASE_URL, DEEPSEEK_API_KEY), as Inspect's `openai-api/SERVICE/MODEL` does."""

    name = "openai-fim"
    path = "/completions"
    key_required = True
    known_base_urls: ClassVar[dict[str, str]] = {
        "openai": "https://api.openai.com/v1",
        "deepseek": "https://api.deepseek.com/beta",  # FIM is DeepSeek's beta feature
    }

    def __init__(self, model_name: str, *args: Any, **kwargs: Any) -> None:
        model = model_name.partition("/")[2]
        if not model:
            raise EndpointError(
                f"openai-fim/{model_name}: name the service before the model, e.g. "
                f"openai-fim/openai/gpt-3.5-turbo-instruct or openai-fim/local/MODEL (the "
                f"service names the variables LOCAL_BASE_URL and LOCAL_API_KEY)."
            )
        super().__init__(model_name, *args, **kwargs)

    def known_base_url(self, model_name: str) -> str | None:
        return self.known_base_urls.get(model_name.partition("/")[0].lower())

    def environment(self, model_name: str) -> tuple[str, list[str]]:
        service = model_name.partition("/")[0].upper().replace("-", "_")
        return f"{service}_BASE_URL", [f"{service}_API_KEY"]

    @property
    def served_model(self) -> str:
        return self.model_name.partition("/")[2]

    def body(self, request: FimRequest, config: GenerateConfig) -> dict[str, Any]:
        return _completions_body(self.served_model, request, config, seed="seed")

    def answer(self, response: dict[str, Any]) -> Answer:
        return _completions_answer(response, lambda choice: choice["text"])


@modelapi("ollama-fim")
class OllamaFimAPI(SuffixFimAPI):
    """Ollama's native generate endpoint with `suffix`:
    https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-completion."""

    name = "ollama-fim"
    path = "/api/generate"
    default_base_url = "http://localhost:11434"

    def body(self, request: FimRequest, config: GenerateConfig) -> dict[str, Any]:
        options = {"num_predict": config.max_tokens, **_sampling(config, seed="seed")}
        return {
            "model": self.served_model,
            "prompt": request.prefix,
            "suffix": request.suffix,
            "options": options,
            "stream": False,
        }

    def decoded(self, response: httpx.Response) -> Any:
        """Ollama streams JSON lines unless told not to (a proxy may drop `stream`): the lines'
        `response` pieces joined, with the last line's counts and reason, as one object."""
        parts = [json.loads(line) for line in response.text.splitlines() if line.strip()]
        if len(parts) < 2:
            return parts[0] if parts else json.loads(response.text)
        return parts[-1] | {"response": "".join(part.get("response", "") for part in parts)}

    def answer(self, response: dict[str, Any]) -> Answer:
        return Answer(
            text=response["response"] or "",
            stop_reason=_stop_reason(response.get("done_reason")),
            input_tokens=response.get("prompt_eval_count"),
            output_tokens=response.get("eval_count"),
        )


@modelapi("llama-cpp-fim")
class LlamaCppFimAPI(SuffixFimAPI):
    """llama.cpp's server `/infill` (the model it was started with; the name is a label):
    https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md#post-infill."""

    name = "llama-cpp-fim"
    path = "/infill"
    default_base_url = "http://localhost:8080"

    def body(self, request: FimRequest, config: GenerateConfig) -> dict[str, Any]:
        return {
            "input_prefix": request.prefix,
            "input_suffix": request.suffix,
            "n_predict": config.max_tokens,
            **_sampling(config, seed="seed"),
        }

    def answer(self, response: dict[str, Any]) -> Answer:
        # Current servers say why in `stop_type` (none, eos, limit, word); older ones in three
        # flags, of which `stopped_limit` is the token limit.
        stopped = response.get("stop_type")
        if stopped is None:
            stopped = "limit" if response.get("stopped_limit") else "stop"
        timings = response.get("timings") or {}
        return Answer(
            text=response["content"] or "",
            stop_reason=_stop_reason(stopped),
            input_tokens=response.get("tokens_evaluated", timings.get("prompt_n")),
            output_tokens=response.get("tokens_predicted", timings.get("predicted_n")),
        )
