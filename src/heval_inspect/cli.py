"""`heval-inspect`: commands around the Inspect tasks (the tasks themselves run with `inspect eval`)."""

import argparse
import sys

from .errors import DataError
from .export import export_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="heval-inspect")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser(
        "export",
        help="write the reference harness's <samples>_results.jsonl for a finished log",
    )
    export.add_argument("log", help="an Inspect log of a task that replayed a completion file")
    export.add_argument("--samples", help="the completion file (default: the one the log used)")
    export.add_argument("--out", help="where to write (default: <samples>_results.jsonl)")
    args = parser.parse_args(argv)
    try:
        path = export_results(args.log, args.samples, args.out)
    except (DataError, OSError, ValueError) as error:
        print(f"heval-inspect: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
