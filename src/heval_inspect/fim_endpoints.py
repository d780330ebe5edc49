"""What the model providers for the hosted fill-in-the-middle endpoints that take the suffix
themselves share: the request and answer, the probe, errors and retries.

These services take the code before the gap and the code after it as two fields and apply the
model's FIM template on their side, so the user never names a FIM family. One provider per wire
protocol: the four services' (what each sends and how it reads the answer) are fim_services.py's.

The prefix and suffix reach the provider as a typed `FimRequest` in the user message's metadata
(the solver `infill_suffix` puts it there): the provider sends them as they are. Before the first
sample, each provider sends one small probe with a suffix and one without, once per process and
server (`-M probe=false` skips it): a wrong key, a model the server does not have, an endpoint
that refuses a suffix, or one that ignores it (the same prompt tokens with and without it) stops
the run with one line. A provider Inspect builds only to look its model up (with Inspect's
placeholder key) sends nothing.

Every error names the provider, the endpoint, the status and the server's own words: a refusal
(4xx other than 408 and 429) ends the sample as an EndpointError saying what to check; a server
error (5xx, 408, 429), an answer that is not the JSON the API documents or a connection that
fails is retried by Inspect, and the last attempt its `max_retries` or `timeout` allows ends the
sample as an EndpointError with the same words (Inspect's own end of retries, tenacity's
RetryError, names none of them). Each protocol reads its service's current response fields and
the older ones where servers still send them (llama.cpp's `stop_type` and its `stopped_*` flags;
Ollama's streamed JSON lines, should a server stream whatever the request says).
"""

import json
import os
import time
from abc import abstractmethod
from contextvars import ContextVar
from typing import Any, ClassVar

import httpx
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelCall,
    ModelOutput,
    ModelUsage,
    RetryDecision,
    StopReason,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import EndpointError
from .inspect_internals import MODEL_INFO_LOOKUP_API_KEY
from .prompts import GAP

# Where the solver puts the FimRequest in the user message's metadata.
FIM_REQUEST = "heval_inspect:fim_request"
# Room for the longest canonical span and a model's detours, as for raw FIM prompts; a server's
# own default is 16 tokens (OpenAI), 128 (Ollama) or no limit (llama.cpp).
DEFAULT_MAX_TOKENS = 1024
# A probe whose suffix has more tokens than any tokenizer could make of nothing.
PROBE = ("def add(a, b):\n    return ", "\n\n\nassert add(1, 2) == 3, 'add(1, 2) should be 3'\n")
HTTP_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
# The servers this process has probed (URL, key, model): one probe per run, not one per model
# object Inspect makes.
_PROBED: set[tuple[str, str | None, str]] = set()


# The failed attempts at the request in hand: which request (its messages' id), when the first
# began, how many failed. Inspect retries a request by calling `generate` again in the same
# asyncio task, so in the same context; a new request, or an answer, starts the count afresh.
_FAILED_ATTEMPTS: ContextVar[tuple[int, float, int] | None] = ContextVar(
    "heval_fim_failed_attempts", default=None
)


class ServerError(Exception):
    """A server's failure that a retry may mend: a 5xx or 429 answer, or an answer that is not
    the JSON its API documents. Its message names the provider, the endpoint, the status and
    the server's own words, so that it says what went wrong when the retries run out."""

    def __init__(
        self,
        message: str,
        status: int,
        retry_after: float | None = None,
        failure: str | None = None,
    ):
        super().__init__(message)
        self.status, self.retry_after = status, retry_after
        self.failure = failure or message  # what went wrong, without what the run does next


class FimRequest(BaseModel):
    """The code around the gap, sent as the endpoint's two fields, unchanged."""

    model_config = ConfigDict(frozen=True)

    prefix: str
    suffix: str

    def as_message(self) -> ChatMessageUser:
        """The user message that carries it: its text shows the gap, for people reading the
        log; providers read the metadata only."""
        return ChatMessageUser(
            content=self.prefix + GAP + self.suffix,
            metadata={FIM_REQUEST: self.model_dump()},
        )

    @classmethod
    def of(cls, input: list[ChatMessage], provider: str) -> "FimRequest":
        """The request in the last user message; one clear line if there is none."""
        metadata = input[-1].metadata if input else None
        try:
            return cls.model_validate((metadata or {})[FIM_REQUEST])
        except (KeyError, ValidationError):
            raise EndpointError(
                f"{provider} takes the code before and after the gap as two fields, not a "
                f"prompt: run it with heval_inspect's default solver (or --solver "
                f"heval_inspect/infill_suffix), without -T fim_format."
            ) from None


class Answer(BaseModel):
    """What an endpoint answered, in the terms every protocol shares."""

    text: str
    stop_reason: StopReason
    input_tokens: int | None = None
    output_tokens: int | None = None

    def usage(self) -> ModelUsage | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        input_tokens, output_tokens = self.input_tokens or 0, self.output_tokens or 0
        return ModelUsage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        )


class SuffixFimAPI(ModelAPI):
    """A provider whose endpoint takes the prefix and the suffix as two fields.

    A protocol says where it posts (`path`), what it sends (`body`) and how it reads the answer
    (`answer`); this class handles the environment, the probe, errors and retries.
    """

    name: ClassVar[str]  # the provider's name, as in `--model name/...`
    path: ClassVar[str]
    default_base_url: ClassVar[str | None] = None
    key_required: ClassVar[bool] = False

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        probe: bool = True,
        **model_args: Any,
    ) -> None:
        # Inspect builds a provider with this placeholder only to look its model up: such a
        # provider sends nothing (not the placeholder as a key, not the probe).
        lookup = api_key == MODEL_INFO_LOOKUP_API_KEY
        if lookup:
            api_key = None
        if model_args:
            raise EndpointError(
                f"{self.name} takes no model argument {', '.join(sorted(model_args))} (only "
                f"-M probe=false)."
            )
        base_url_var, key_vars = self.environment(model_name)
        base_url = base_url or os.environ.get(base_url_var) or self.known_base_url(model_name)
        if not base_url:
            raise EndpointError(
                f"{self.name}/{model_name}: set {base_url_var} (or --model-base-url) to the "
                f"server's URL, e.g. https://host/v1."
            )
        super().__init__(
            model_name, base_url.rstrip("/"), api_key, key_vars, config or GenerateConfig()
        )
        self.api_key = self.api_key or next(
            (os.environ[var] for var in key_vars if os.environ.get(var)), None
        )
        if self.key_required and not self.api_key and not lookup:
            raise EndpointError(
                f"{self.name}/{model_name}: set {key_vars[0]} to your API key (or to any "
                f"value, e.g. none, for a server that takes no key)."
            )
        self.client = httpx.AsyncClient(timeout=HTTP_TIMEOUT)
        probed = (self.url, self.api_key, self.served_model)
        if probe and not lookup and probed not in _PROBED:
            self.probe()
            _PROBED.add(probed)

    def environment(self, model_name: str) -> tuple[str, list[str]]:
        """The variables of the base URL and of the key (the first is the one to set)."""
        prefix = self.name.upper().replace("-", "_")
        return f"{prefix}_BASE_URL", [f"{prefix}_API_KEY"]

    def known_base_url(self, model_name: str) -> str | None:
        """Where the service is when no variable says otherwise."""
        return self.default_base_url

    @property
    def served_model(self) -> str:
        """The model's name on the server."""
        return self.model_name

    @property
    def url(self) -> str:
        return f"{self.base_url}{self.path}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @abstractmethod
    def body(self, request: FimRequest, config: GenerateConfig) -> dict[str, Any]:
        """The JSON body the endpoint takes: the two fields and the generation settings it has."""

    @abstractmethod
    def answer(self, response: dict[str, Any]) -> Answer:
        """The endpoint's answer."""

    def max_tokens(self) -> int | None:
        return DEFAULT_MAX_TOKENS

    def connection_key(self) -> str:
        return f"{self.base_url} {self.initial_api_key}"

    async def aclose(self) -> None:
        await self.client.aclose()

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> tuple[ModelOutput | Exception, ModelCall]:
        body = self.body(FimRequest.of(input, self.name), config)
        started = time.monotonic()
        failed = _FAILED_ATTEMPTS.get()
        if failed is None or failed[0] != id(input):
            failed = (id(input), started, 0)
        try:
            response = await self.client.post(self.url, json=body, headers=self.headers())
            elapsed = time.monotonic() - started
            if response.status_code >= 400 and not retryable(response.status_code):
                # Not to be retried, and no sample can get further: the run stops, in one line.
                raise self.refusal(response)
            if response.status_code >= 400:
                raise self.failure(response)  # Inspect retries it (should_retry)
            data, answer = self.read(response)
        except (ServerError, httpx.TransportError) as error:
            attempts, first = failed[2] + 1, failed[1]
            _FAILED_ATTEMPTS.set((id(input), first, attempts))
            if last_attempt(attempts, time.monotonic() - first, config):
                _FAILED_ATTEMPTS.set(None)
                raise self.persisted(error, attempts, time.monotonic() - first) from None
            raise
        _FAILED_ATTEMPTS.set(None)
        output = ModelOutput(
            model=self.model_name,
            choices=[
                ChatCompletionChoice(
                    message=ChatMessageAssistant(
                        content=answer.text, model=self.model_name, source="generate"
                    ),
                    stop_reason=answer.stop_reason,
                )
            ],
            usage=answer.usage(),
            time=elapsed,
        )
        return output, ModelCall.create(body, data, time=elapsed)

    def read(self, response: httpx.Response) -> tuple[Any, Answer]:
        """The answer's JSON and what it says; a ServerError if it is not the JSON the API
        documents (a proxy's error page, a cut connection, another API)."""
        try:
            data = self.decoded(response)
            return data, self.answer(data)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as error:
            raise ServerError(
                f"{self.name}/{self.model_name}: {self.url} answered {response.status_code} with "
                f"a body that is not the JSON its API documents ({type(error).__name__}: "
                f"{_one_line(str(error))}; it began: {_one_line(response.text)[:120]!r}): "
                f"check that {self.base_url} is the service's URL.",
                response.status_code,
            ) from None

    def decoded(self, response: httpx.Response) -> Any:
        """The answer's JSON (a protocol that may stream says how to join it)."""
        return json.loads(response.text)

    def failure(self, response: httpx.Response) -> ServerError:
        """A retryable error answer, in words that say what went wrong."""
        failure = (
            f"{self.name}/{self.model_name}: {self.url} failed ({response.status_code}: "
            f"{server_message(response)})"
        )
        return ServerError(
            f"{failure}; the run retries it, and stops if it persists.",
            response.status_code,
            _seconds(response.headers.get("retry-after")),
            failure,
        )

    def persisted(self, error: Exception, attempts: int, seconds: float) -> EndpointError:
        """The error that ends a sample when Inspect's retries run out: what the last attempt
        met, in the server's own words, and what the user can change."""
        if isinstance(error, ServerError):
            what = error.failure
        else:
            what = (
                f"{self.name}/{self.model_name}: no answer from {self.url} "
                f"({type(error).__name__}: {_one_line(str(error))[:200]})"
            )
        tries = "once" if attempts == 1 else f"{attempts} times in {seconds:.0f} s"
        return EndpointError(
            f"{what}; tried {tries}, the last the run's retries allow: check the server, or "
            f"allow more (--max-retries, --timeout)."
        )

    def should_retry(self, ex: Exception) -> bool | RetryDecision:
        if isinstance(ex, ServerError):
            if ex.status == 429:
                return RetryDecision.rate_limit(retry_after=ex.retry_after)
            return RetryDecision.transient(retry_after=ex.retry_after)
        if isinstance(ex, httpx.HTTPStatusError):
            status = ex.response.status_code
            retry_after = _seconds(ex.response.headers.get("retry-after"))
            if status == 429:
                return RetryDecision.rate_limit(retry_after=retry_after)
            if retryable(status):
                return RetryDecision.transient(retry_after=retry_after)
            return RetryDecision.no()
        if isinstance(ex, httpx.TransportError):  # connection reset, timeouts
            return RetryDecision.transient()
        return RetryDecision.no()

    def is_auth_failure(self, ex: Exception) -> bool:
        return isinstance(ex, httpx.HTTPStatusError) and ex.response.status_code == 401

    def refusal(self, response: httpx.Response) -> EndpointError:
        """One line for a request the server refused, with its own words."""
        status = response.status_code
        what = {
            401: f"the key was refused: check {self.environment(self.model_name)[1][0]}",
            403: f"the key was refused: check {self.environment(self.model_name)[1][0]}",
            404: f"check the model name and that {self.base_url} serves {self.path}",
        }.get(status, "check the model name, and that the model and endpoint take a suffix")
        return EndpointError(
            f"{self.name}/{self.model_name}: {self.url} refused the request ({status}: "
            f"{server_message(response)}); {what}."
        )

    def probe(self) -> None:
        """Send a small request with a suffix and one without, and stop the run with one line
        if the server refuses them or answers the same prompt size to both (it ignored the
        suffix). A server that is busy or failing (429, 5xx) is left to the run's retries."""
        config = GenerateConfig(max_tokens=1, temperature=0.0)
        counts = []
        with httpx.Client(timeout=httpx.Timeout(60.0, connect=10.0)) as client:
            for suffix in (PROBE[1], ""):
                body = self.body(FimRequest(prefix=PROBE[0], suffix=suffix), config)
                try:
                    response = client.post(self.url, json=body, headers=self.headers())
                except httpx.TransportError as error:
                    raise EndpointError(
                        f"{self.name}/{self.model_name}: no server answers at {self.base_url} "
                        f"({type(error).__name__}): start it, or set "
                        f"{self.environment(self.model_name)[0]} (or --model-base-url)."
                    ) from None
                if retryable(response.status_code):
                    return
                if response.status_code >= 400:
                    raise self.refusal(response)
                try:
                    counts.append(self.read(response)[1].input_tokens)
                except ServerError as error:
                    raise EndpointError(str(error)) from None
        with_suffix, without = counts
        if with_suffix is not None and without is not None and with_suffix <= without:
            raise EndpointError(
                f"{self.name}/{self.model_name}: {self.url} ignores the suffix (the prompt "
                f"counted {with_suffix} tokens with it, {without} without): use an endpoint "
                f"or model that fills in the middle, or -M probe=false to run anyway."
            )


def last_attempt(attempts: int, seconds: float, config: GenerateConfig) -> bool:
    """Whether Inspect retries no more after this many failed attempts over these seconds: its
    stop rule (inspect_ai.model._retry), max_retries retries after the first attempt, or
    `timeout` seconds since the first began."""
    if config.max_retries is not None and attempts > config.max_retries:
        return True
    return config.timeout is not None and seconds >= config.timeout


def retryable(status: int) -> bool:
    # 501 is llama.cpp's answer for a model without FIM tokens: retrying cannot help.
    return status in (408, 429) or (status >= 500 and status != 501)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def server_message(response: httpx.Response) -> str:
    """The server's own words for an error, on one line."""
    try:
        data = response.json()
    except ValueError:
        text = response.text
    else:
        error = data.get("error", data.get("message", data.get("detail", data)))
        if isinstance(error, dict):
            error = error.get("message", error)
        text = error if isinstance(error, str) else str(error)
    return _one_line(text)[:300] or response.reason_phrase


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None
