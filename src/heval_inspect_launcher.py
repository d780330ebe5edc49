"""`heval-inspect`'s entry point, a module outside the package: importing `heval_inspect` (and
with it Inspect) takes seconds, more on a busy machine, and a Ctrl-C then must end the command
as one line too, not with the traceback of an import. Everything else is `heval_inspect.cli`."""

import signal
import sys


def main() -> int:
    try:
        from heval_inspect.cli import main as command
    except BaseException as error:
        if not _from_ctrl_c(error):
            raise
        print("heval-inspect: interrupted (Ctrl-C) before it started.", file=sys.stderr)
        return 128 + signal.SIGINT
    return command()


def _from_ctrl_c(error: BaseException | None) -> bool:
    """Whether a Ctrl-C caused this error. An import can wrap it: Python 3.11 reraises what a
    class attribute's `__set_name__` raises (pydantic's models have many) as a RuntimeError."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__cause__ or error.__context__
    return False
