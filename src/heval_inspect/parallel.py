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
"""

import hashlib
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from .sandbox import COMPOSE_FILE
from .sandbox.pool import (
    POOL_SIZE_ENV,
    container_share,
    containers_the_machine_holds,
    file_table,
)
from .schema import RUN_KEY, ShardRecord


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
    if any(arg.startswith("shard=") or arg.startswith("--task-arg=shard=") for arg in command):
        raise ValueError("the command already names a shard; leave -T shard=... to this command.")
    return [[*command, "-T", f"shard={index}/{shards}"] for index in run or range(1, shards + 1)]


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


def logs_of_run(log_dir: str, key: str) -> list[tuple[str, EvalLog]]:
    """The logs in `log_dir` (not its subfolders) that record the run `key` (`heval_run`), each
    with its header."""
    return logs_by_run(log_dir).get(key, [])


def logs_by_run(log_dir: str) -> dict[str, list[tuple[str, EvalLog]]]:
    """The logs in `log_dir` (not its subfolders) that record a run (`heval_run`), each with its
    header, by run: one pass over the folder for a command that looks up many runs."""
    if "://" not in log_dir and not Path(log_dir).is_dir():
        return {}
    found: dict[str, list[tuple[str, EvalLog]]] = {}
    for info in list_eval_logs(log_dir, recursive=False):
        header = read_eval_log(info.name, header_only=True)
        if key := (header.eval.metadata or {}).get(RUN_KEY):
            found.setdefault(key, []).append((info.name, header))
    return found


def finished_shards(log_dir: str, key: str, shards: int) -> dict[int, str]:
    """The shards (of `shards`) of the command `key` that have a successful log in `log_dir`."""
    finished = {}
    for name, header in logs_of_run(log_dir, key):
        shard = ShardRecord.from_metadata((header.eval.metadata or {}).get("shard"))
        if header.status == "success" and shard is not None and shard.count == shards:
            finished[shard.index] = name
    return finished


def run_parallel(command: list[str], shards: int, cores: int, run: str | None = None) -> int:
    """Start this machine's shards, wait for all of them; 0 if every one succeeded."""
    if shards < 1 or cores < 1:
        raise ValueError("--shards and --cores must be 1 or more.")
    mine = shard_range(run, shards)
    if not command:
        raise ValueError(
            "give the eval command after --, e.g. heval-inspect parallel --shards 2 -- "
            "inspect eval heval_inspect/humaneval_infilling --model none "
            "--solver heval_inspect/reference"
        )
    key = run_key(command)
    finished = finished_shards(log_dir_of(command), key, shards)
    for index in sorted(set(finished) & set(mine)):
        print(
            f"heval-inspect: shard {index}/{shards} already has a successful log of this command "
            f"({finished[index].removeprefix('file://')}): not run again.",
            file=sys.stderr,
        )
    mine = [index for index in mine if index not in finished]
    if not mine:
        return 0
    command = [*command, "--metadata", f"{RUN_KEY}={key}"]
    if "--display" not in command and not any(a.startswith("--display=") for a in command):
        # n live displays in one terminal overwrite each other; the plain one prints lines.
        command = [*command, "--display", "plain"]
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    most = containers_the_machine_holds(memory, file_table(), container_share(str(COMPOSE_FILE)))
    if cores > most:
        print(
            f"heval-inspect: {cores} containers could take more than half of this machine's "
            f"memory or open-file table; the shards share {most}.",
            file=sys.stderr,
        )
        cores = most
    sizes = pool_sizes(len(mine), cores)
    if len(mine) > cores:
        print(
            f"heval-inspect: {len(mine)} shards on {cores} cores: each gets one container, "
            f"{len(mine) - cores} more than the cores.",
            file=sys.stderr,
        )
    processes = []
    for argv, size in zip(shard_commands(command, shards, mine), sizes, strict=True):
        print(f"heval-inspect: {POOL_SIZE_ENV}={size} {shlex.join(argv)}", file=sys.stderr)
        processes.append(subprocess.Popen(argv, env=os.environ | {POOL_SIZE_ENV: str(size)}))
    codes = _wait(processes)
    failed = [(index, code) for index, code in zip(mine, codes, strict=True) if code != 0]
    for index, code in failed:
        print(
            f"heval-inspect: shard {index}/{shards} failed (exit code {code}): "
            f"`inspect eval-retry` its log, or rerun the command with -T shard={index}/{shards}.",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _wait(processes: list[subprocess.Popen]) -> list[int]:
    # Ctrl-C reaches every shard (one process group): each stops and writes its log on its own,
    # and this waits for them to finish doing so.
    while True:
        try:
            return [process.wait() for process in processes]
        except KeyboardInterrupt:
            continue
