"""Local fakes of the FIM endpoints that take a suffix, one per wire protocol, on 127.0.0.1.

Each follows its endpoint's public reference: the route, the fields it accepts (a request with
any other field, a missing required field or a field of the wrong type is refused, as the real
servers' validation refuses it; Ollama and llama.cpp themselves ignore unknown fields, so their
fakes are stricter), the answer's shape, its token usage and its errors (a key refused, a model
it does not have, a model that cannot fill in the middle). The model answers the task whose
prefix and suffix it is given, found by their content, in one of the `STYLES`: as a perfect
model (the canonical middle) or as imperfect ones. The OpenAI-compatible fake also answers raw
StarCoder FIM prompts (no `suffix`) in the same styles, as a raw-completion server of that
family does, so the two paths can be compared on the same middles.

| protocol | route | reference |
| --- | --- | --- |
| mistral | POST /v1/fim/completions | https://docs.mistral.ai/api/#tag/fim |
| openai | POST /v1/completions | https://platform.openai.com/docs/api-reference/completions/create |
| ollama | POST /api/generate | https://github.com/ollama/ollama/blob/main/docs/api.md |
| llama_cpp | POST /infill | llama.cpp tools/server/README.md, POST /infill |

`fields="older"` answers in the fields servers of an earlier release sent where they differ:
llama.cpp's three `stopped_*` flags where current servers (2025 on) send `stop_type` (none, eos,
limit, word) and `timings`. Ollama streams JSON lines unless the request says `"stream": false`,
as the service does (`streams=True`: a server, or a proxy, that streams whatever the request
says). `fault` makes every request after the first `fault_after` fail as a server can: a
persisting 500 with the server's own message, a 200 whose body is cut short (not JSON), or a
key refused (401).
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from ..prompts import FIM_FORMATS, fim_prompt
from .answers import GARBAGE
from .perfect_model import LocalServer, within_max_tokens

Protocol = Literal["mistral", "openai", "ollama", "llama_cpp"]
PROTOCOLS: tuple[Protocol, ...] = ("mistral", "openai", "ollama", "llama_cpp")
ROUTES: dict[Protocol, str] = {
    "mistral": "/v1/fim/completions",
    "openai": "/v1/completions",
    "ollama": "/api/generate",
    "llama_cpp": "/infill",
}
# The base URL a provider is given: the route's part before the provider's own path.
BASE_PATHS: dict[Protocol, str] = {"mistral": "/v1", "openai": "/v1", "ollama": "", "llama_cpp": ""}
STARCODER = FIM_FORMATS["starcoder"]

# The answer a model gives for the canonical middle and the suffix.
STYLES: dict[str, Callable[[str, str], str]] = {
    "perfect": lambda middle, suffix: middle,
    # The server returns the model's end token as text, and what the model wrote after it.
    "past_the_gap": lambda middle, suffix: middle + "<|endoftext|>" + GARBAGE,
    "repeats_suffix": lambda middle, suffix: middle + suffix,
    "empty": lambda middle, suffix: "",
}
# What a server does with a model, besides answering in a style.
Behaviour = Literal["fills", "ignores_suffix", "refuses_suffix"]


@dataclass(frozen=True)
class FakeModel:
    style: str = "perfect"
    behaviour: Behaviour = "fills"


# Fields each endpoint accepts (type checks for those the providers send), and those it requires.
_NUMBER = (int, float)
FIELDS: dict[Protocol, dict[str, type | tuple[type, ...]]] = {
    "mistral": {
        "model": str, "prompt": str, "suffix": str, "temperature": _NUMBER, "top_p": _NUMBER,
        "max_tokens": int, "min_tokens": int, "stream": bool, "stop": (str, list),
        "random_seed": int,
    },
    "openai": {
        "model": str, "prompt": (str, list), "suffix": str, "max_tokens": int,
        "temperature": _NUMBER, "top_p": _NUMBER, "n": int, "stream": bool,
        "stream_options": dict, "logprobs": int, "echo": bool, "stop": (str, list),
        "presence_penalty": _NUMBER, "frequency_penalty": _NUMBER, "best_of": int,
        "logit_bias": dict, "user": str, "seed": int,
    },
    "ollama": {
        "model": str, "prompt": str, "suffix": str, "images": list, "format": (str, dict),
        "options": dict, "system": str, "template": str, "stream": bool, "raw": bool,
        "keep_alive": (str, int), "context": list, "think": bool,
    },
    "llama_cpp": {
        "input_prefix": str, "input_suffix": str, "input_extra": list, "prompt": str,
        "n_predict": int, "temperature": _NUMBER, "top_k": int, "top_p": _NUMBER,
        "min_p": _NUMBER, "stop": list, "seed": int, "stream": bool, "cache_prompt": bool,
        "n_keep": int, "n_indent": int, "samplers": list,
    },
}  # fmt: skip
REQUIRED: dict[Protocol, tuple[str, ...]] = {
    "mistral": ("model", "prompt"),
    "openai": ("model", "prompt"),
    "ollama": ("model",),
    "llama_cpp": (),
}
OLLAMA_OPTIONS = {
    "num_predict", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "num_ctx",
    "repeat_penalty", "repeat_last_n", "presence_penalty", "frequency_penalty", "num_keep",
    "typical_p", "num_batch", "num_gpu", "main_gpu", "use_mmap", "num_thread",
}  # fmt: skip


class Refused(Exception):
    def __init__(self, status: int, payload: dict):
        self.status, self.payload = status, payload


@dataclass(frozen=True)
class Raw:
    """An answer sent as these bytes, not as a JSON object."""

    status: int
    data: bytes
    content_type: str = "application/json"


Fault = Literal["server_error", "malformed", "key_refused"]
# What the fake's server says of a persisting failure (a 500): the words a user needs to see.
SERVER_ERROR_MESSAGE = "CUDA error: out of memory (the model could not be loaded)"


def tokens(text: str) -> int:
    """About as many tokens as a code tokenizer makes of the text."""
    return len(re.findall(r"\s+|\w+|[^\w\s]", text))


@dataclass
class FimEndpointFake(LocalServer):
    """One protocol's endpoint over HTTP on 127.0.0.1, in a thread, as a context manager.

    `models` maps the names the server has to how they answer; llama.cpp's server has one model
    (requests name none), the first. With `key`, requests must carry it as a bearer token.
    Requests are kept in `requests` (path and JSON body), refused ones too.
    """

    protocol: Protocol
    records: list[dict]
    models: dict[str, FakeModel] = field(default_factory=lambda: {"perfect": FakeModel()})
    key: str | None = None
    requests: list[tuple[str, dict]] = field(default_factory=list)
    fields: Literal["current", "older"] = "current"
    streams: bool = False
    fault: Fault | None = None
    fault_after: int = 0

    def __post_init__(self) -> None:
        self.middles = {
            (record["prompt"], record.get("suffix", "")): record["canonical_solution"]
            for record in self.records
        }
        self.raw_prompts = {
            fim_prompt(STARCODER, prefix, suffix): (prefix, suffix)
            for prefix, suffix in self.middles
        }
        super().__init__(_handler(self))

    @property
    def url(self) -> str:
        """The base URL a provider is given (…/v1 for Mistral and OpenAI)."""
        return f"http://127.0.0.1:{self.port}{BASE_PATHS[self.protocol]}"

    def bodies(self) -> list[dict]:
        """The bodies of the requests that asked for a task's gap (not the probes)."""
        with self._lock:
            return [body for _, body in self.requests if self._gap(body) in self.middles]

    def handle(self, path: str, headers: dict[str, str], body: Any) -> dict | Raw:
        with self._lock:
            self.requests.append((path, body))
            seen = len(self.requests)
        if self.fault and seen > self.fault_after:
            return self._fault()
        if path != ROUTES[self.protocol]:
            raise Refused(404, self._error(f"Not Found: {path}", "not_found"))
        if self.key and headers.get("authorization") != f"Bearer {self.key}":
            raise Refused(401, self._error("Unauthorized", "authentication_error"))
        self._validate(body)
        model = self._model(body)
        prefix, suffix = self._gap(body)
        raw = (
            self.protocol == "openai"
            and "suffix" not in body
            and body["prompt"] in self.raw_prompts
        )
        if raw:
            prefix, suffix = self.raw_prompts[body["prompt"]]
        if model.behaviour == "refuses_suffix" and suffix:
            raise Refused(*self._refusal(body))
        middle = self.middles.get((prefix, suffix))
        if model.behaviour == "ignores_suffix":
            # A plain completion of the prefix: the model writes the middle, then carries on.
            middle = self.middles.get((prefix, suffix))
            text = "" if middle is None else middle + suffix
            prompt_tokens = tokens(prefix) + 1
        else:
            text = "" if middle is None else STYLES[model.style](middle, suffix)
            prompt_tokens = tokens(prefix) + tokens(suffix) + 3  # and the FIM tokens
        if raw:
            text += STARCODER.stop[0] + GARBAGE  # a raw server that does not cut at stops
        text, finish = within_max_tokens(text, self._max_tokens(body))
        answer = self._answer(body, text, finish, prompt_tokens, tokens(text))
        if self.protocol == "ollama" and (self.streams or body.get("stream", True)):
            return self._streamed(answer)
        return answer

    def _fault(self) -> dict | Raw:
        if self.fault == "key_refused":
            raise Refused(401, self._error("Unauthorized: the API key was revoked", "auth"))
        if self.fault == "server_error":
            raise Refused(500, self._error(SERVER_ERROR_MESSAGE, "server_error"))
        return Raw(200, b'{"id": "cmpl-fake", "choices": [{"text": "    return sor')

    def _streamed(self, answer: dict) -> Raw:
        """Ollama's stream: a line per piece of the response, then the last with the counts."""
        text, pieces = answer["response"], []
        for start in range(0, max(len(text), 1), 8):
            pieces.append({"model": answer["model"], "created_at": answer["created_at"],
                           "response": text[start : start + 8], "done": False})  # fmt: skip
        pieces.append(answer | {"response": ""})
        data = "".join(json.dumps(piece) + "\n" for piece in pieces).encode()
        return Raw(200, data, "application/x-ndjson")

    def _validate(self, body: Any) -> None:
        if not isinstance(body, dict):
            raise Refused(400, self._error("the body must be a JSON object", "invalid_request"))
        accepted = FIELDS[self.protocol]
        for name, value in body.items():
            if name not in accepted:
                raise Refused(*self._unknown_field(name))
            if not isinstance(value, accepted[name]) or isinstance(value, bool) != (
                accepted[name] is bool
            ):
                raise Refused(422, self._error(f"{name}: wrong type", "invalid_request_error"))
        for name in REQUIRED[self.protocol]:
            if name not in body:
                raise Refused(422, self._error(f"{name}: field required", "missing"))
        if self.protocol == "ollama":
            unknown = set(body.get("options", {})) - OLLAMA_OPTIONS
            if unknown:
                raise Refused(400, {"error": f"invalid options: {', '.join(sorted(unknown))}"})

    def _model(self, body: dict) -> FakeModel:
        if self.protocol == "llama_cpp":
            return next(iter(self.models.values()))
        name = body["model"]
        if name in self.models:
            return self.models[name]
        if self.protocol == "mistral":
            raise Refused(400, {"object": "error", "message": f"Invalid model: {name}",
                                "type": "invalid_model", "param": None,
                                "code": "1500"})  # fmt: skip
        if self.protocol == "openai":
            raise Refused(404, {"error": {"message": f"The model `{name}` does not exist",
                                          "type": "invalid_request_error",
                                          "code": "model_not_found"}})  # fmt: skip
        raise Refused(404, {"error": f"model '{name}' not found"})

    def _gap(self, body: dict) -> tuple[str, str]:
        if self.protocol == "llama_cpp":
            return body.get("input_prefix", ""), body.get("input_suffix", "")
        return body.get("prompt", ""), body.get("suffix", "")

    def _max_tokens(self, body: dict) -> int | None:
        if self.protocol == "ollama":
            return body.get("options", {}).get("num_predict")
        if self.protocol == "llama_cpp":
            return body.get("n_predict")
        return body.get("max_tokens", 16 if self.protocol == "openai" else None)

    def _error(self, message: str, kind: str) -> dict:
        if self.protocol == "mistral":
            return {"object": "error", "message": message, "type": kind, "param": None}
        if self.protocol == "ollama":
            return {"error": message}
        return {"error": {"message": message, "type": kind, "code": None}}

    def _unknown_field(self, name: str) -> tuple[int, dict]:
        if self.protocol == "mistral":
            detail = [{"type": "extra_forbidden", "loc": ["body", name],
                       "msg": "Extra inputs are not permitted"}]  # fmt: skip
            return 422, {"object": "error", "message": {"detail": detail},
                         "type": "invalid_request_error"}  # fmt: skip
        return 400, self._error(
            f"Unrecognized request argument supplied: {name}", "invalid_request"
        )

    def _refusal(self, body: dict) -> tuple[int, dict]:
        """What each server says of a model that cannot fill in the middle."""
        if self.protocol == "ollama":
            return 400, {
                "error": f"registry.ollama.ai/library/{body['model']} does not support insert"
            }
        if self.protocol == "llama_cpp":
            message = "Infill is not supported by this model: prefix token is missing. "
            return 501, {"error": {"code": 501, "message": message, "type": "not_supported_error"}}
        if self.protocol == "openai":
            return 400, self._error("suffix is not currently supported", "BadRequestError")
        return 400, self._error(f"Model {body['model']} does not support FIM", "invalid_model")

    def _answer(self, body: dict, text: str, finish: str, prompt: int, completion: int) -> dict:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}  # fmt: skip
        if self.protocol == "mistral":
            return {
                "id": "fim-fake", "object": "chat.completion", "created": 0,
                "model": body["model"], "usage": usage,
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": text,
                                         "prefix": False, "tool_calls": None}}],
            }  # fmt: skip
        if self.protocol == "openai":
            return {
                "id": "cmpl-fake", "object": "text_completion", "created": 0,
                "model": body["model"], "usage": usage,
                "choices": [{"index": 0, "text": text, "finish_reason": finish,
                             "logprobs": None}],
            }  # fmt: skip
        if self.protocol == "ollama":
            return {
                "model": body["model"], "created_at": "2024-01-01T00:00:00Z", "response": text,
                "done": True, "done_reason": finish, "context": [], "total_duration": 1,
                "load_duration": 0, "prompt_eval_count": prompt, "prompt_eval_duration": 1,
                "eval_count": completion, "eval_duration": 1,
            }  # fmt: skip
        if self.fields == "older":
            return {
                "content": text, "id_slot": 0, "stop": True, "model": "fake.gguf",
                "tokens_predicted": completion, "tokens_evaluated": prompt,
                "stopped_eos": finish == "stop", "stopped_word": False,
                "stopped_limit": finish == "length", "stopping_word": "", "tokens_cached": 0,
                "truncated": False, "generation_settings": {}, "prompt": "", "timings": {},
            }  # fmt: skip
        return {
            "index": 0, "content": text, "tokens": [], "id_slot": 0, "stop": True,
            "model": "fake.gguf", "tokens_predicted": completion, "tokens_evaluated": prompt,
            "stop_type": "eos" if finish == "stop" else "limit", "stopping_word": "",
            "tokens_cached": 0, "truncated": False, "generation_settings": {}, "prompt": "",
            "timings": {"prompt_n": prompt, "predicted_n": completion},
        }  # fmt: skip


def _handler(server: FimEndpointFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            try:
                body = json.loads(self.rfile.read(length) or b"null")
                headers = {key.lower(): value for key, value in self.headers.items()}
                answer = server.handle(self.path.split("?")[0], headers, body)
                if isinstance(answer, Raw):
                    self._send_raw(answer)
                else:
                    self._send(200, answer)
            except json.JSONDecodeError:
                self._send(400, {"error": "invalid JSON"})
            except Refused as refused:
                self._send(refused.status, refused.payload)

        def _send(self, status: int, payload: dict) -> None:
            self._send_raw(Raw(status, json.dumps(payload).encode()))

        def _send_raw(self, raw: Raw) -> None:
            self.send_response(raw.status)
            self.send_header("Content-Type", raw.content_type)
            self.send_header("Content-Length", str(len(raw.data)))
            self.end_headers()
            self.wfile.write(raw.data)

    return Handler
