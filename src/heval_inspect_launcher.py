"""`heval-inspect`'s entry point, a module outside the package: importing `heval_inspect` (and
with it Inspect) takes seconds, more on a busy machine, and a Ctrl-C then must end the command
as one line too, not with the traceback of an import. Everything else is `heval_inspect.cli`."""

import signal
import sys


def main() -> int:
    try:
        from heval_inspect.cli import main as command
    except KeyboardInterrupt:
        print("heval-inspect: interrupted (Ctrl-C) before it started.", file=sys.stderr)
        return 128 + signal.SIGINT
    return command()
