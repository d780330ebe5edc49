"""A perfect model: it answers every task with its canonical span, the way real models write it
(answers.py). `PerfectModelServer` serves both on 127.0.0.1 over the HTTP APIs Inspect's
providers speak (OpenAI chat completions, responses and completions, Anthropic messages),
finding the task by the prompt it receives. Used by the tests and by
benchmarks/perfect_model.py.
"""

import hashlib
import json
import re
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from ..prompts import FIM_FORMATS, FimFormat, chat_prompt, fim_prompt
from .answers import CHAT_STYLES, chat_answer, fim_answer
from .chat_layouts import layout_answer, model_layout


def prompt_key(prompt: str) -> bytes:
    return hashlib.sha256(prompt.encode()).digest()


@dataclass(frozen=True)
class Gap:
    prefix: str
    middle: str
    suffix: str
    # The FIM families whose prompt this is (Qwen2.5-Coder's and CodeGemma's layouts are the
    # same); empty for the chat prompt.
    families: tuple[FimFormat, ...]


def prompt_index(records: list[dict]) -> dict[bytes, Gap]:
    """Every prompt the tasks can send (chat, and each FIM family's), to its gap."""
    index = {}
    for record in records:
        prefix, middle, suffix = (
            record["prompt"],
            record["canonical_solution"],
            record.get("suffix", ""),
        )
        index[prompt_key(chat_prompt(prefix, suffix))] = Gap(prefix, middle, suffix, ())
        for family in FIM_FORMATS.values():
            key = prompt_key(fim_prompt(family, prefix, suffix))
            families = index[key].families if key in index else ()
            index[key] = Gap(prefix, middle, suffix, (*families, family))
    return index


def within_max_tokens(text: str, max_tokens: int | None) -> tuple[str, str]:
    """The text a model limited to max_tokens returns, and why it stopped.

    Tokens are approximated by runs of whitespace, words and single symbols, which is no longer
    than what real tokenizers make of code.
    """
    if max_tokens is None:
        return text, "stop"
    pieces = re.findall(r"\s+|\w+|[^\w\s]", text)
    if len(pieces) <= max_tokens:
        return text, "stop"
    return "".join(pieces[:max_tokens]), "length"


MAX_REQUEST_BYTES = 4 * 1024 * 1024


def is_mid_line(record: dict) -> bool:
    """Both ends of the gap inside a line of code."""
    middle, suffix = record["canonical_solution"], record["suffix"]
    return (
        not record["prompt"].endswith("\n")
        and middle.strip() != ""
        and not middle.endswith("\n")
        and suffix[:1] not in ("", "\n")
    )


class LocalServer:
    """An HTTP server on a free port of 127.0.0.1, in a thread, for a `with` block: the fakes'
    common part (each gives the request handler it serves with)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._http.server_address[1]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=10)


class PerfectModelServer(LocalServer):
    """The perfect model over HTTP on 127.0.0.1, in a thread, for use as a context manager.

    The chat style is the model name (`openai/bare_fence`, `anthropic/think_fence`); completions
    answer in the raw form of the FIM family the model is named after
    (`openai-api-completions/perfect/codegemma`), else of the family whose prompt came. Requests
    are kept in `requests` (path and JSON body) so tests can check what the providers sent.
    """

    def __init__(self, records: list[dict], layouts: tuple[str, ...] = ()):
        self.index = prompt_index(records)
        # The answers in each of these layouts, written now: the request threads would parse
        # code beside the eval's own parsing, which CPython 3.11's ast module does not survive.
        self.layout_answers = {
            (f"{layout}.{'right' if right else 'wrong'}", key): answer
            for layout in layouts
            for right in (True, False)
            for key, gap in self.index.items()
            if not gap.families
            if (answer := layout_answer(layout, gap.prefix, gap.middle, gap.suffix, right))
        }
        # The latest requests only, so that a whole-benchmark run does not keep them all.
        self.requests: deque[tuple[str, dict]] = deque(maxlen=10_000)
        super().__init__(_handler(self))

    @property
    def url(self) -> str:
        """The base URL without /v1 (Anthropic's client adds it; OpenAI's wants it given)."""
        return f"http://127.0.0.1:{self.port}"

    def record(self, path: str, body: dict) -> None:
        with self._lock:
            self.requests.append((path, body))

    def gap(self, prompt: str) -> Gap:
        gap = self.index.get(prompt_key(prompt))
        if gap is None:
            raise LookupError(f"no task has this prompt: {prompt[:200]!r}")
        return gap

    def chat_reply(self, model: str, prompt: str) -> str:
        """The answer in the style the model is named after, or in a layout of
        `chat_layouts` given to the server (`renamed_parameters.right`, `...wrong`)."""
        gap = self.gap(prompt)
        if model_layout(model) is not None:
            answer = self.layout_answers.get((model, prompt_key(prompt)))
            if answer is None:
                raise LookupError(f"no answer in the layout {model} to this task")
            return answer
        return chat_answer(CHAT_STYLES[model], gap.prefix, gap.middle, gap.suffix)

    def completion(self, model: str, prompt: str) -> str:
        """The raw answer of the family the model is named after, else of the prompt's family."""
        gap = self.gap(prompt)
        if not gap.families:
            raise LookupError("the completions endpoint got a chat prompt")
        named = [family for family in gap.families if family.name == model]
        return fim_answer((named or list(gap.families))[0], gap.middle)


def _text(content: str | list[dict[str, Any]]) -> str:
    """A message's text, whether the API sent a string or a list of parts."""
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") for part in content if part.get("type") in ("text", "input_text")
    )


def _message_events(message: dict) -> list[dict]:
    """An Anthropic message as the server-sent events of a streamed reply (Inspect streams when
    max_tokens is large), its text in one delta per line."""
    text = message["content"][0]["text"]
    start = message | {"content": [], "stop_reason": None}
    deltas = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": line}}
        for line in text.splitlines(keepends=True)
    ]
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *deltas,
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]


def _handler(server: PerfectModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "perfect", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            if length > MAX_REQUEST_BYTES:
                self._send(413, {"error": {"message": "request too large"}})
                return
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            server.record(path, body)
            try:
                if path.endswith("/chat/completions"):
                    self._send(200, _chat_completion(server, body))
                elif path.endswith("/responses"):
                    self._send(200, _response(server, body))
                elif path.endswith("/completions"):
                    self._send(200, _completion(server, body))
                elif path.endswith("/messages") and body.get("stream"):
                    self._send_events(_message_events(_anthropic_message(server, body)))
                elif path.endswith("/messages"):
                    self._send(200, _anthropic_message(server, body))
                else:
                    self._send(404, {"error": {"message": f"no route {path}"}})
            except (LookupError, KeyError) as error:
                self._send(400, {"error": {"type": "invalid_request_error", "message": str(error)}})

        def _send(self, status: int, payload: dict) -> None:
            self._write(status, "application/json", json.dumps(payload).encode())

        def _send_events(self, events: list[dict]) -> None:
            stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
            self._write(200, "text/event-stream", stream.encode())

        def _write(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _chat_completion(server: PerfectModelServer, body: dict) -> dict:
    """OpenAI's chat completions API's answer to `body`: the server's reply to its last message."""
    prompt = _text(body["messages"][-1]["content"])
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    text, finish = within_max_tokens(server.chat_reply(body["model"], prompt), limit)
    return {
        "id": "chatcmpl-perfect",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _response(server: PerfectModelServer, body: dict) -> dict:
    """OpenAI's Responses API's answer to `body`: the server's reply to its last input."""
    # OpenAI's Responses API, which Inspect uses for OpenAI models it takes for current
    # ones (any name it does not know); the chat completions API for older ones.
    message = body["input"] if isinstance(body["input"], str) else body["input"][-1]
    prompt = message if isinstance(message, str) else _text(message["content"])
    text, finish = within_max_tokens(
        server.chat_reply(body["model"], prompt), body.get("max_output_tokens")
    )
    return {
        "id": "resp_perfect",
        "object": "response",
        "created_at": 0,
        "status": "completed" if finish == "stop" else "incomplete",
        "incomplete_details": None if finish == "stop" else {"reason": "max_output_tokens"},
        "model": body["model"],
        "output": [
            {
                "type": "message",
                "id": "msg_perfect",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 1,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2,
        },
    }


def _completion(server: PerfectModelServer, body: dict) -> dict:
    """OpenAI's (legacy) completions API's answer to `body`: the completion of its prompt."""
    text, finish = within_max_tokens(
        server.completion(body["model"], body["prompt"]), body.get("max_tokens")
    )
    return {
        "id": "cmpl-perfect",
        "object": "text_completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _anthropic_message(server: PerfectModelServer, body: dict) -> dict:
    """Anthropic's messages API's answer to `body` (unstreamed): the reply to its last message."""
    prompt = _text(body["messages"][-1]["content"])
    text, finish = within_max_tokens(
        server.chat_reply(body["model"], prompt), body.get("max_tokens")
    )
    return {
        "id": "msg_perfect",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn" if finish == "stop" else "max_tokens",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
