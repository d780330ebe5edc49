"""`heval-inspect`: commands around the Inspect tasks (the tasks themselves run with `inspect eval`)."""

import argparse
import sys

from .errors import DataError
from .export import export_results
from .host import usable_cores
from .parallel import run_parallel


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
    parallel = commands.add_parser(
        "parallel",
        help="run an `inspect eval` command as n shard processes on this machine, and wait",
        description=(
            "Starts the command once per shard with -T shard=i/n added, each with its own "
            "sandbox pool (HEVAL_POOL_SIZE) so that the pools together have one container per "
            "core, and waits for all of them. Each shard writes its own log. Several machines "
            "share one run with the same --shards and a --run range each."
        ),
    )
    parallel.add_argument(
        "--shards",
        type=int,
        default=usable_cores(),
        help="number of shards of the run (default: this machine's cores)",
    )
    parallel.add_argument(
        "--cores",
        type=int,
        default=usable_cores(),
        help="containers shared out among the shards (default: this machine's cores)",
    )
    parallel.add_argument(
        "--run",
        metavar="FIRST-LAST",
        help="run only these of the shards, e.g. 9-16 of --shards 32 (default: all)",
    )
    parallel.add_argument(
        "eval_command",
        nargs=argparse.REMAINDER,
        help="after --: the inspect eval command, without -T shard",
    )
    report = commands.add_parser(
        "report",
        help="compare runs: results with 95%% intervals, paired differences, failure kinds, plots",
        description=(
            "Reads logs of heval_inspect's tasks (files, or folders searched recursively), merges "
            "the shards of a run, and prints and writes the report: report.md, report.html (one "
            "self-contained page with the plots) and CSV files. A run is named by its eval "
            "metadata 'label' (inspect eval --metadata label=NAME), else its model, else its first "
            "tag (--tags NAME), else its completion file."
        ),
    )
    report.add_argument("logs", nargs="+", metavar="LOG_OR_DIR", help="log files or folders")
    report.add_argument("--out", default="heval-report", help="folder to write into")
    report.add_argument(
        "--baseline",
        metavar="MODEL",
        help="compare every run with this one (a run's name or model); default: every pair",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "report":
            return _report(args.logs, args.out, args.baseline)
        if args.command == "parallel":
            command = args.eval_command
            if command[:1] == ["--"]:
                command = command[1:]
            return run_parallel(command, args.shards, args.cores, args.run)
        path = export_results(args.log, args.samples, args.out)
    except (DataError, OSError, ValueError) as error:
        print(f"heval-inspect: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _report(logs: list[str], out: str, baseline: str | None) -> int:
    from pathlib import Path

    from .report import build_report
    from .report.render import terminal, write_all

    report = build_report(logs, baseline)
    terminal(report)
    files = write_all(report, Path(out))
    print(f"Wrote into {out}:")
    print("\n".join(f"  {path.name}" for path in files.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
