"""`heval-inspect`'s entry point, a module outside the package: importing `heval_inspect` (and
with it Inspect) takes seconds, more on a busy machine, and a Ctrl-C then must end the command
as one line too, not with the traceback of an import. Everything else is `heval_inspect.cli`."""

import signal
import sys


def main() -> int:
    # A Ctrl-C during the import is noted as well as raised: code it lands in may swallow it
    # (a bare `except:`) or turn it into an error of its own with no trace of it (pydantic-core
    # builds a model's validator in Rust: a SchemaError whose message ends "KeyboardInterrupt").
    pressed: list[int] = []

    def on_ctrl_c(number: int, frame: object) -> None:
        pressed.append(number)
        raise KeyboardInterrupt

    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # started in the background
    previous = (
        signal.getsignal(signal.SIGINT) if ignored else signal.signal(signal.SIGINT, on_ctrl_c)
    )
    try:
        from heval_inspect.cli import main as command
    except BaseException as error:
        if not (pressed or _from_ctrl_c(error)):
            raise
        return _interrupted_before_it_started()
    finally:
        if not ignored:
            signal.signal(signal.SIGINT, previous or signal.default_int_handler)
    if pressed:  # swallowed on the way
        return _interrupted_before_it_started()
    return command()


def _interrupted_before_it_started() -> int:
    print("heval-inspect: interrupted (Ctrl-C) before it started.", file=sys.stderr)
    return 128 + signal.SIGINT


def _from_ctrl_c(error: BaseException | None) -> bool:
    """Whether a Ctrl-C caused this error. An import can wrap it: Python 3.11 reraises what a
    class attribute's `__set_name__` raises (pydantic's models have many) as a RuntimeError."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__cause__ or error.__context__
    return False
