"""`heval-inspect parallel`: one `inspect eval` command as n shard processes on this machine.

One eval process is serial Python, so it uses about one core however many the machine has. This
starts the same command n times, with `-T shard=i/n` added (i = 1 ... n) and each process's sandbox
pool (HEVAL_POOL_SIZE) sized so that the pools together have one container per core, then waits
for them all. With `--run first-last`, a machine runs only those of the n shards (several machines,
one range each). Nothing else: no queue, no retries; a failed shard is rerun on its own (its log
says which shard it was), and every shard writes its own log to the command's --log-dir.

Run again (a requeued Slurm job, a restarted pod, the same command after an interruption), it
starts only the shards that have no successful log of the same command in the log folder: each
shard's log records the command it came from (the eval metadata's `heval_run`, a digest of the
command less its shard and display), so a rerun neither repeats finished work nor leaves two
successful logs of one shard, which the report would refuse as an overlap.

Inspect's `--limit` and `--sample-id` pick samples of each shard's own share, so over n shards
`--limit 10` would run 10 samples n times: they mean the whole run, so they are passed to the
task as `-T limit=...` and `-T sample_id=...`, which pick the run's samples before the shard
split (shard.py).
"""

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from inspect_ai.log import EvalLog

from .run_logs import logs_of_run
from .sandbox import COMPOSE_FILE
from .sandbox.capacity import (
    POOL_SIZE_ENV,
    container_share,
    containers_the_machine_holds,
    file_table,
)
from .schema import RUN_KEY, EvalMetadata


def pool_sizes(shards: int, cores: int) -> list[int]:
    """Containers per shard: `cores` shared out as evenly as they go, at least one each."""
    base, extra = divmod(cores, shards)
    return [max(1, base + (index < extra)) for index in range(shards)]


def shard_range(text: str | None, shards: int) -> range:
    """The shards this machine runs: "first-last" or "one" (1-based) of `shards`; None: all."""
    if text is None:
        return range(1, shards + 1)
    first, _, last = text.partition("-")
    last = last or first
    if first.isdigit() and last.isdigit() and 1 <= int(first) <= int(last) <= shards:
        return range(int(first), int(last) + 1)
    raise ValueError(
        f"--run {text}: give the first and last shard this machine runs, from 1 to {shards} "
        f"(e.g. --run 1-8 of --shards 32)."
    )


def shard_commands(
    command: list[str], shards: int, run: Sequence[int] | None = None
) -> list[list[str]]:
    """The command of each shard this machine runs: the user's, with `-T shard=i/n` added."""
    if any(arg.startswith(("shard=", "--task-arg=shard=")) for arg in command):
        raise ValueError("the command already names a shard; leave -T shard=... to this command.")
    return [[*command, "-T", f"shard={index}/{shards}"] for index in run or range(1, shards + 1)]


# Inspect's options (and their environment variables) that pick samples, which it applies to each
# shard's share alone, and the task arguments that pick them from the whole run instead.
WHOLE_RUN_OPTIONS = {"--limit": "limit", "--sample-id": "sample_id"}
WHOLE_RUN_ENV = {"INSPECT_EVAL_LIMIT": "--limit", "INSPECT_EVAL_SAMPLE_ID": "--sample-id"}
SHUFFLE_ENV = "INSPECT_EVAL_SAMPLE_SHUFFLE"


def whole_run_selection(
    command: list[str], environ: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The command, and its environment, with Inspect's --limit and --sample-id (given as options
    or as INSPECT_EVAL_LIMIT, INSPECT_EVAL_SAMPLE_ID) as the task arguments that pick the same
    samples from the whole run before the shard split."""
    kept: list[str] = []
    picked: dict[str, str] = {}
    position = 0
    while position < len(command):
        arg = command[position]
        name, equals, value = arg.partition("=")
        if name in WHOLE_RUN_OPTIONS and (equals or position + 1 < len(command)):
            if not equals:
                position += 1
                value = command[position]
            picked[WHOLE_RUN_OPTIONS[name]] = value
        else:
            kept.append(arg)
        position += 1
    environ = dict(environ)
    for variable, option in WHOLE_RUN_ENV.items():
        value = environ.pop(variable, "")
        if value:
            picked.setdefault(WHOLE_RUN_OPTIONS[option], value)
    shuffled = "--sample-shuffle" in kept or any(a.startswith("--sample-shuffle=") for a in kept)
    if "limit" in picked and (shuffled or environ.get(SHUFFLE_ENV)):
        raise ValueError(
            "--limit with --sample-shuffle: shards cannot take the shuffled run's first samples "
            "between them; leave out one of the two (--sample-id picks given samples)."
        )
    for argument, value in picked.items():
        kept += ["-T", f"{argument}={value}"]
    return kept, environ


def runnable(program: str) -> str:
    """The eval command's program as it can be started: as given where PATH (or the path given)
    has it, else heval-inspect's own environment's (a shell without that environment activated
    runs the `inspect` installed beside heval-inspect, as the user meant); a ValueError saying
    what to do if neither has it."""
    if shutil.which(program) is not None:
        return program
    beside = Path(sys.executable).with_name(Path(program).name)
    if "/" not in program and beside.is_file() and os.access(beside, os.X_OK):
        print(
            f"heval-inspect: `{program}` is not on PATH; running heval-inspect's own: {beside}",
            file=sys.stderr,
        )
        return str(beside)
    raise ValueError(missing_program(program))


def missing_program(program: str) -> str:
    """What to do when the eval command's program cannot be started: it is not on PATH, or the
    path given is not an executable file."""
    beside = Path(sys.executable).with_name(Path(program).name)
    if "/" in program:
        return (
            f"cannot run {program}: no executable file there; give the path of the eval "
            f"command (e.g. {beside.parent}/inspect) or its name on PATH."
        )
    return (
        f"`{program}` is not on PATH: activate the virtual environment that has inspect-ai "
        f"and heval-inspect installed (source .venv/bin/activate; pip install heval-inspect), "
        f"or give the command's path."
    )


def run_key(command: list[str]) -> str:
    """The digest of an eval command (its shard and display left out) that its shards' logs
    record, to find the shards a rerun of it has already finished."""
    kept, skip = [], False
    for arg in command:
        if skip:
            skip = False
        elif arg == "--display":
            skip = True
        elif not arg.startswith("--display="):
            kept.append(arg)
    return hashlib.sha256(shlex.join(kept).encode()).hexdigest()[:16]


def log_dir_of(command: list[str]) -> str:
    """Where the command writes its logs: its --log-dir, else Inspect's INSPECT_LOG_DIR, else
    ./logs (Inspect's default)."""
    for position, arg in enumerate(command):
        if arg == "--log-dir" and position + 1 < len(command):
            return command[position + 1]
        if arg.startswith("--log-dir="):
            return arg.split("=", 1)[1]
    return os.environ.get("INSPECT_LOG_DIR", "logs")


def finished_shards(log_dir: str, key: str, shards: int) -> dict[int, str]:
    """The shards (of `shards`) of the command `key` that have a successful log in `log_dir`."""
    finished = {}
    for name, header in logs_of_run(log_dir, key):
        shard = EvalMetadata.read(header.eval.metadata).shard
        if header.status == "success" and shard is not None and shard.count == shards:
            finished[shard.index] = name
    return finished


def run_parallel(command: list[str], shards: int, cores: int, run: str | None = None) -> int:
    """Start this machine's shards, wait for all of them; 0 if every one succeeded."""
    if shards < 1 or cores < 1:
        raise ValueError("--shards and --cores must be 1 or more.")
    mine: Sequence[int] = shard_range(run, shards)
    if not command:
        raise ValueError(
            "give the eval command after --, e.g. heval-inspect parallel --shards 2 -- "
            "inspect eval heval_inspect/humaneval_infilling --model none "
            "--solver heval_inspect/reference"
        )
    program = runnable(command[0])
    key = run_key(command)
    log_dir = log_dir_of(command)
    finished = finished_shards(log_dir, key, shards)
    for index in sorted(set(finished) & set(mine)):
        print(
            f"heval-inspect: shard {index}/{shards} already has a successful log of this command "
            f"({finished[index].removeprefix('file://')}): not run again.",
            file=sys.stderr,
        )
    mine = [index for index in mine if index not in finished]
    if not mine:
        return 0
    command, environ = whole_run_selection([program, *command[1:]], dict(os.environ))
    command = [*command, "--metadata", f"{RUN_KEY}={key}"]
    if "--display" not in command and not any(a.startswith("--display=") for a in command):
        # n live displays in one terminal overwrite each other; the plain one prints lines.
        command = [*command, "--display", "plain"]
    sizes = shared_containers(len(mine), cores)
    processes = []
    for argv, size in zip(shard_commands(command, shards, mine), sizes, strict=True):
        print(f"heval-inspect: {POOL_SIZE_ENV}={size} {shlex.join(argv)}", file=sys.stderr)
        processes.append(subprocess.Popen(argv, env=environ | {POOL_SIZE_ENV: str(size)}))
    codes = _wait(processes)
    latest = latest_logs(log_dir, key)
    failed = 0
    for index, code in zip(mine, codes, strict=True):
        log = latest.get(index)
        # Inspect exits with 0 when a task ends in error: its log says so.
        if code == 0 and (log is None or log[1].status == "success"):
            continue
        failed += 1
        print(f"heval-inspect: {_failure(index, shards, code, log)}", file=sys.stderr)
    return 1 if failed else 0


def shared_containers(shards: int, cores: int) -> list[int]:
    """The pool size of each of this machine's `shards`: `cores` containers shared out among
    them, or as many as the machine holds if fewer; said on stderr when the machine holds fewer
    or the shards outnumber the cores."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    most = containers_the_machine_holds(memory, file_table(), container_share(str(COMPOSE_FILE)))
    if cores > most:
        print(
            f"heval-inspect: {cores} containers could take more than half of this machine's "
            f"memory or open-file table; the shards share {most}.",
            file=sys.stderr,
        )
        cores = most
    sizes = pool_sizes(shards, cores)
    if shards > cores:
        print(
            f"heval-inspect: {shards} shards on {cores} cores: each gets one container, "
            f"{shards - cores} more than the cores.",
            file=sys.stderr,
        )
    return sizes


def latest_logs(log_dir: str, key: str) -> dict[int, tuple[str, EvalLog]]:
    """Each shard's newest log of the run `key` in `log_dir`, with its header."""
    latest: dict[int, tuple[str, EvalLog]] = {}
    for name, header in logs_of_run(log_dir, key):
        shard = EvalMetadata.read(header.eval.metadata).shard
        if shard and (
            shard.index not in latest or header.eval.created > latest[shard.index][1].eval.created
        ):
            latest[shard.index] = (name, header)
    return latest


def _failure(index: int, shards: int, code: int, log: tuple[str, EvalLog] | None) -> str:
    """One shard's failure: how it ended, where its log is, and what to do."""
    if code < 0:
        ended = f"killed by {signal.Signals(-code).name}"
    elif code > 0:
        ended = f"exit code {code}"
    else:
        ended = f"its log's status is {log[1].status if log else 'unknown'}"
    rerun = "rerun this command (it starts only the shards without a successful log)"
    if log is None:
        return (
            f"shard {index}/{shards} failed ({ended}) and wrote no log: its error is in its "
            f"output above, after the line that starts it (-T shard={index}/{shards}); {rerun}."
        )
    name = log[0].removeprefix("file://")
    return (
        f"shard {index}/{shards} failed ({ended}): its log is {name}; {rerun}, or "
        f"`inspect eval-retry {name}`."
    )


def _wait(processes: list[subprocess.Popen]) -> list[int]:
    # Ctrl-C reaches every shard (one process group): each stops and writes its log on its own,
    # and this waits for them to finish doing so.
    while True:
        try:
            return [process.wait() for process in processes]
        except KeyboardInterrupt:
            continue
