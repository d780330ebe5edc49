"""A perfect model: it answers every task with its canonical span, the way real models write it.

Chat styles are rows of `CHAT_STYLES`, rendered by one function; a FIM answer is the canonical
span, the family's first stop token and some garbage after it. `PerfectModelServer` serves both on
127.0.0.1 over the HTTP APIs Inspect's providers speak (OpenAI chat completions, responses and
completions, Anthropic messages), finding the task by the prompt it receives. Used by the tests
and by benchmarks/perfect_model.py.
"""

import hashlib
import json
import re
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

from ..prompts import FIM_FORMATS, FimFormat, chat_prompt, fim_prompt
from .chat_layouts import layout_answer, model_layout

# What a model may write after its stop token: never part of the middle.
GARBAGE = "\ndef unrelated():\n    return 'after the stop token'\n"
THOUGHT = "<think>\nThe gap needs the missing code; a ```python block\nholds it.\n</think>\n\n"
PROSE_BEFORE = "Here is the missing code:\n\n"
PROSE_AFTER = "\n\nIt fills the gap so that the tests pass."
# Code a model adds after the function it restates, to show it in use.
MAIN_BLOCK = '\n\nif __name__ == "__main__":\n    import doctest\n\n    doctest.testmod()\n'
EXAMPLE_USAGE = "\n\n# Example usage:\nprint({call})\n"
DEF_LINE = re.compile(r"^(?:async[ \t]+)?def[ \t]+(?P<name>\w+)", re.MULTILINE)
DOCSTRING = re.compile(r"""(?P<indentation>[ \t]*)("{3}|'{3}).*?\2[^\n]*\n""", re.DOTALL)


@dataclass(frozen=True)
class ChatStyle:
    name: str
    before: str = ""  # text before the code (prose, a think block)
    after: str = ""
    fence: str | None = "python"  # the fence's language tag; None: no fence
    closed: bool = True  # False: the fence is never closed
    # The code around the gap the answer restates: before the middle, the prefix's last line with
    # code, the function from its `def` line (after the imports, or alone), or the whole prefix;
    # after it, the suffix's first line with code, or the whole suffix (the rest of the program).
    repeats_prefix: Literal["nothing", "line", "function", "imports_and_function", "all"] = (
        "nothing"
    )
    repeats_suffix: Literal["nothing", "line", "all"] = "nothing"
    docstring: Literal["kept", "dropped", "own"] = "kept"  # in a restated function
    trailing: str = ""  # top-level code after the program, e.g. an `if __name__` block
    strips_line_ends: bool = False  # True: no whitespace at the ends of lines, as editors save
    line_break: str = "\n"
    # False: the code's own final line break is not shown (the fence's line break stands for it,
    # or the API dropped it), as most real answers go. Then the answer cannot tell whether the
    # middle ends its line, and only the program, not the span, can be recovered exactly.
    exact: bool = True


CHAT_STYLES: dict[str, ChatStyle] = {
    style.name: style
    for style in [
        ChatStyle("bare_fence"),
        ChatStyle("prose_fence", before=PROSE_BEFORE, after=PROSE_AFTER),
        ChatStyle("think_fence", before=THOUGHT),
        ChatStyle("repeated_prefix_line", repeats_prefix="line"),
        # The whole program, from its first line.
        ChatStyle(
            "whole_function", before=PROSE_BEFORE, repeats_prefix="all", repeats_suffix="all"
        ),
        ChatStyle("no_fence", fence=None),
        ChatStyle("py_tag", fence="py"),
        ChatStyle("python3_tag", fence="python3"),
        ChatStyle("untagged_fence", fence=""),
        ChatStyle("unclosed_fence", before=PROSE_BEFORE, closed=False),
        ChatStyle("repeated_suffix_line", repeats_suffix="line"),
        ChatStyle("crlf", before=PROSE_BEFORE, after=PROSE_AFTER, line_break="\r\n"),
        ChatStyle("natural_fence", exact=False),
        ChatStyle("natural_no_fence", fence=None, exact=False),
        ChatStyle("natural_repeated_prefix_line", repeats_prefix="line", exact=False),
        ChatStyle(
            "natural_whole_function", repeats_prefix="all", repeats_suffix="all", exact=False
        ),
        # Answers that restate the function, or the rest of the program, around the middle.
        ChatStyle("def_to_end", repeats_prefix="function", repeats_suffix="all"),
        ChatStyle(
            "natural_def_to_end", repeats_prefix="function", repeats_suffix="all", exact=False
        ),
        ChatStyle(
            "natural_def_to_end_with_imports",
            before=PROSE_BEFORE,
            after=PROSE_AFTER,
            repeats_prefix="imports_and_function",
            repeats_suffix="all",
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_stripped_line_ends",
            repeats_prefix="function",
            repeats_suffix="all",
            strips_line_ends=True,
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_without_docstring",
            repeats_prefix="function",
            repeats_suffix="all",
            docstring="dropped",
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_own_docstring_crlf",
            before=PROSE_BEFORE,
            repeats_prefix="function",
            repeats_suffix="all",
            docstring="own",
            line_break="\r\n",
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_example_usage",
            repeats_prefix="function",
            repeats_suffix="all",
            trailing=EXAMPLE_USAGE,
            exact=False,
        ),
        ChatStyle(
            "natural_def_to_end_main_block",
            repeats_prefix="function",
            repeats_suffix="all",
            trailing=MAIN_BLOCK,
            exact=False,
        ),
        ChatStyle(
            "natural_whole_program_example_usage_no_fence",
            fence=None,
            repeats_prefix="all",
            repeats_suffix="all",
            trailing=EXAMPLE_USAGE,
            exact=False,
        ),
        ChatStyle(
            "natural_rest_of_program", repeats_prefix="line", repeats_suffix="all", exact=False
        ),
        ChatStyle(
            "natural_rest_of_program_main_block",
            repeats_prefix="line",
            repeats_suffix="all",
            trailing=MAIN_BLOCK,
            exact=False,
        ),
    ]
}


def chat_answer(style: ChatStyle, prefix: str, middle: str, suffix: str) -> str:
    """What a perfect chat model answers in this style."""
    repeated_suffix = _repeated_suffix(style, middle, suffix)
    code = _repeated_prefix(style, prefix) + middle + repeated_suffix
    if repeated_suffix == suffix:  # code after the program follows all of it
        code += _trailing(style, prefix)
    if style.strips_line_ends:
        code = "\n".join(line.rstrip() for line in code.split("\n"))
    if not style.exact and code.endswith("\n"):
        code = code[:-1]
    if style.fence is None:
        text = code
    else:
        # The fence lines enclose the code: its own final line break, if shown, makes an empty
        # last line.
        text = f"```{style.fence}\n{code}" + ("\n```" if style.closed else "")
    return (style.before + text + style.after).replace("\n", style.line_break)


def _repeated_prefix(style: ChatStyle, prefix: str) -> str:
    if style.repeats_prefix == "all":
        return prefix
    if style.repeats_prefix in ("function", "imports_and_function"):
        function = _restated_function(prefix, style.docstring)
        imports = "".join(
            line
            for line in prefix.splitlines(keepends=True)
            if line.startswith(("import ", "from "))
        )
        if style.repeats_prefix == "function" or not imports:
            return function
        return f"{imports}\n\n{function}"  # two blank lines, whatever the prompt had
    if style.repeats_prefix != "line":
        return ""
    # Restart at the beginning of the last line with code: the gap's own line, or the lines
    # before it when the gap's line has no code before the gap.
    start = len(prefix)
    while start > 0 and not prefix[start:].strip():
        start = prefix.rfind("\n", 0, start - 1) + 1
    return prefix[start:]


def _restated_function(prefix: str, docstring: str) -> str:
    """The prefix from the `def` line of the function that holds the gap, its docstring as the
    style has it."""
    start = [match.start() for match in DEF_LINE.finditer(prefix)][-1]
    body = prefix.index("\n", start) + 1
    found = DOCSTRING.match(prefix, body)
    if docstring == "kept" or not found:
        return prefix[start:]
    own = f'{found["indentation"]}"""Solve the task."""\n' if docstring == "own" else ""
    return prefix[start:body] + own + prefix[found.end() :]


def _repeated_suffix(style: ChatStyle, middle: str, suffix: str) -> str:
    if style.repeats_suffix == "all" and style.repeats_prefix == "line":
        ends_in_indentation = middle[middle.rfind("\n") + 1 :].isspace()
        if ends_in_indentation and suffix[:1].isspace() and "\n" not in suffix.rstrip():
            # The middle ends with indentation that the suffix's one line continues: after a
            # repeated prefix line, repeating that line reads the same as a middle that ends
            # with it, which extract.py resolves as the middle's own line.
            return ""
    if style.repeats_suffix == "all":
        return suffix
    if style.repeats_suffix != "line" or not suffix.strip():
        return ""
    if not (middle.endswith("\n") or suffix.startswith("\n")):
        # A gap that ends within a line: repeating the rest of that line reads the same as a
        # middle that ends with that text, which extract.py resolves by the middle's own reading.
        return ""
    # Up to the end of the first line that holds code.
    code_at = len(suffix) - len(suffix.lstrip())
    end = suffix.find("\n", code_at)
    return suffix if end == -1 else suffix[:end]


def _trailing(style: ChatStyle, prefix: str) -> str:
    """The style's trailing code, calling the function as its first doctest example does."""
    if not style.trailing:
        return ""
    name = [match["name"] for match in DEF_LINE.finditer(prefix)][-1]
    example = re.search(rf"^\s*>>> ({name}\(.*\))\s*$", prefix, re.MULTILINE)
    return style.trailing.format(call=example[1] if example else f"{name}()")


def fim_answer(family: FimFormat, middle: str) -> str:
    """What a FIM model generates when the server does not cut at the stop sequences."""
    return middle + family.stop[0] + GARBAGE


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
