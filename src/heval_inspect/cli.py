"""`heval-inspect`: commands around the Inspect tasks (the tasks themselves run with
`inspect eval`)."""

import argparse
import os
import signal
import sys
from importlib.metadata import version
from typing import Any

import yaml

from .errors import Interrupted
from .export import export_results
from .host import usable_cores
from .inspect_internals import PrerequisiteError
from .parallel import run_parallel
from .sandbox import DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT
from .score import SAMPLES_PER_LOG, TAKEN, score_completions


def main(argv: list[str] | None = None) -> int:
    """The command; its exit code. An error is one line on stderr saying what to do."""
    try:
        return _command(parser().parse_args(argv))
    except (PrerequisiteError, OSError, ValueError) as error:
        _error(error)
        return 1
    except Interrupted as error:
        _error(error)
        return INTERRUPTED
    except KeyboardInterrupt:
        _error("interrupted (Ctrl-C) before it finished; run the same command again.")
        return INTERRUPTED


# The exit code of a process that Ctrl-C (SIGINT) stopped, as shells give it.
INTERRUPTED = 128 + signal.SIGINT


def _error(error: BaseException | str) -> None:
    # Some messages quote another program's output over several lines: one line, to be read.
    print(f"heval-inspect: {' '.join(str(error).split())}", file=sys.stderr)


def parser() -> argparse.ArgumentParser:
    """The command line: every command and its options."""
    parser = argparse.ArgumentParser(prog="heval-inspect")
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {version('heval-inspect')}"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_export(commands)
    _add_parallel(commands)
    _add_report(commands)
    _add_score(commands)
    return parser


def _add_export(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`heval-inspect export`: the reference harness's results file of a log."""
    export = commands.add_parser(
        "export",
        help="write the reference harness's results file (task_id, completion, result, passed) "
        "for a finished log",
        description=(
            "Writes the reference harness's <samples>_results.jsonl for the log of any run of a "
            "heval_inspect task: the rows of its completion file with each one's verdict, or, "
            "for a model's run (or a completion file that is gone), one row per sample of the "
            "log, in task order and then by epoch."
        ),
    )
    export.add_argument("log", help="the log (.eval or .json) of a run of a heval_inspect task")
    export.add_argument(
        "--samples",
        metavar="FILE",
        help="the completion file whose rows to write (default: the one the log replayed, if "
        "it is there; else the rows come from the log itself)",
    )
    export.add_argument(
        "--out",
        metavar="FILE",
        help="where to write (default: <samples>_results.jsonl, or <log>_results.jsonl beside "
        "the log when the rows come from the log)",
    )


def _add_parallel(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`heval-inspect parallel`: an `inspect eval` command as n shard processes."""
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


def _add_report(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`heval-inspect report`: the comparison of runs from their logs."""
    report = commands.add_parser(
        "report",
        help="compare runs: results with 95%% intervals, paired differences, failure kinds, plots",
        description=(
            "Reads logs of heval_inspect's tasks (files, or folders searched recursively), merges "
            "the shards of a run, and prints and writes the report: report.md, report.html (one "
            "self-contained page with the plots) and CSV files. A run is named by its eval "
            "metadata 'label' (inspect eval --metadata label=NAME), else its model, else its first "
            "tag (--tags NAME), else its completion file. Of several successful logs of one run "
            "(or shard), e.g. a run made twice into one folder, the newest counts and a note "
            "names the others: to report another, give its file alone."
        ),
    )
    report.add_argument("logs", nargs="+", metavar="LOG_OR_DIR", help="log files or folders")
    report.add_argument(
        "--out",
        default="heval-report",
        metavar="DIR",
        help="folder to write into (default: %(default)s, in the current folder)",
    )
    report.add_argument(
        "--baseline",
        metavar="MODEL",
        help="compare every run with this one (a run's name or model); default: every pair",
    )


def _add_score(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`heval-inspect score`: a completion file scored without Inspect's sample loop. (Long
    only as a list is: one add_argument per option, each with its help.)"""
    score = commands.add_parser(
        "score",
        help="score a completion file made elsewhere, as `inspect eval TASK -T samples=FILE`, "
        "without Inspect's per-sample loop",
        description=(
            "Runs every completion's program in the pool sandbox, as many at a time as it has "
            "containers, through the task's own scorer, and writes the Inspect log that `inspect "
            "eval TASK --model none -T samples=FILE` writes (inspect view, evals_df, export and "
            "report read it alike), flushed to the file as it goes; a run of more than "
            "--samples-per-log samples writes the logs of its shards (-T shard=i/m), one after "
            "the other. Run again after an interruption, it takes over the samples the "
            "interrupted log holds and scores the rest."
        ),
    )
    score.add_argument(
        "samples", help="JSON lines of task_id and completion (the reference's format)"
    )
    score.add_argument("--task", required=True, help="e.g. humaneval_infilling, humaneval")
    score.add_argument(
        "-T",
        dest="task_args",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"a task argument, as for inspect eval: {', '.join(TAKEN)} (defaults, the task's: "
        "humaneval_infilling's every subset, partial=false, k=1, "
        f"timeout={DEFAULT_TIMEOUT:g} seconds, memory_limit={DEFAULT_MEMORY_MIB} MiB, the "
        "official problems from $HEVAL_DATA_DIR or else the download cache, the whole run, "
        "variant=original)",
    )
    score.add_argument(
        "--log-dir",
        default=None,
        metavar="DIR",
        help="where to write the log(s) (default: $INSPECT_LOG_DIR, else ./logs)",
    )
    score.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="eval metadata, as for inspect eval (e.g. label=NAME, which the report names runs "
        "by; default: none)",
    )
    score.add_argument(
        "--samples-per-log",
        type=int,
        default=SAMPLES_PER_LOG,
        metavar="N",
        help=f"a run of more samples writes one log per shard of about N samples, in turn, which "
        f"`heval-inspect report` merges (default: {SAMPLES_PER_LOG:,}; each log's samples are "
        f"held in memory until it is finished)",
    )
    score.add_argument(
        "--display",
        choices=["full", "rich", "plain", "log", "conversation", "none"],
        default="plain",
        help="none: no progress lines (the others, as `heval-inspect parallel` passes, print "
        "them; default: plain)",
    )


def _command(args: argparse.Namespace) -> int:
    if args.command == "score":
        log_dir = _folder(args.log_dir or os.environ.get("INSPECT_LOG_DIR", "logs"), "--log-dir")
        logs = score_completions(
            args.samples,
            args.task,
            _assignments(args.task_args, "-T"),
            log_dir,
            _assignments(args.metadata, "--metadata"),
            progress=args.display != "none",
            samples_per_log=args.samples_per_log,
        )
        print("\n".join(logs))
        return 0
    if args.command == "report":
        return _report(args.logs, _folder(args.out, "--out"), args.baseline)
    if args.command == "parallel":
        command = args.eval_command
        if command[:1] == ["--"]:
            command = command[1:]
        return run_parallel(command, args.shards, args.cores, args.run)
    print(export_results(args.log, args.samples, args.out))
    return 0


def _folder(path: str, option: str) -> str:
    """A folder to write into, refused before any work when a file has its name."""
    if "://" not in path and os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{option} {path} is a file: name a folder (made if missing).")
    return path


def _assignments(given: list[str], option: str) -> dict[str, Any]:
    """NAME=VALUE arguments as `inspect eval` reads -T and --metadata (so that the log records
    the same values): each value as YAML, and a plain string with commas as the list of its
    parts ("k=1,10" is ["1", "10"])."""
    assigned = {}
    for each in given:
        name, equals, text = each.partition("=")
        if not equals or not name:
            raise ValueError(f"{option} {each}: give NAME=VALUE (e.g. {option} k=1,10).")
        value = yaml.safe_load(text)
        if isinstance(value, str) and "," in value:
            value = value.split(",")
        assigned[name.strip().replace("-", "_")] = value
    return assigned


def _report(logs: list[str], out: str, baseline: str | None) -> int:
    from pathlib import Path

    from .report import build_report
    from .report.render import write_all
    from .report.terminal import terminal

    report = build_report(logs, baseline)
    terminal(report)
    files = write_all(report, Path(out))
    print(f"Wrote into {out}:")
    print("\n".join(f"  {path.name}" for path in files.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
