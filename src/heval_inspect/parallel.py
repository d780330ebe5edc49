"""`heval-inspect parallel`: one `inspect eval` command as n shard processes on this machine.

One eval process is serial Python, so it uses about one core however many the machine has. This
starts the same command n times, with `-T shard=i/n` added (i = 1 ... n) and each process's sandbox
pool (HEVAL_POOL_SIZE) sized so that the pools together have one container per core, then waits
for them all. Nothing else: no queue, no retries; a failed shard is rerun on its own (its log says
which shard it was), and every shard writes its own log to the command's --log-dir.
"""

import os
import shlex
import subprocess
import sys

from .sandbox.pool import POOL_SIZE_ENV


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def pool_sizes(shards: int, cores: int) -> list[int]:
    """Containers per shard: `cores` shared out as evenly as they go, at least one each."""
    base, extra = divmod(cores, shards)
    return [max(1, base + (index < extra)) for index in range(shards)]


def shard_commands(command: list[str], shards: int) -> list[list[str]]:
    """The command of each shard: the user's, with `-T shard=i/n` added."""
    if any(arg.startswith("shard=") or arg.startswith("--task-arg=shard=") for arg in command):
        raise ValueError("the command already names a shard; leave -T shard=... to this command.")
    return [[*command, "-T", f"shard={index}/{shards}"] for index in range(1, shards + 1)]


def run_parallel(command: list[str], shards: int, cores: int) -> int:
    """Start every shard, wait for all of them; 0 if every shard succeeded."""
    if shards < 1 or cores < 1:
        raise ValueError("--shards and --cores must be 1 or more.")
    if not command:
        raise ValueError(
            "give the eval command after --, e.g. heval-inspect parallel --shards 2 -- "
            "inspect eval heval_inspect/humaneval_infilling --model none "
            "--solver heval_inspect/reference"
        )
    if "--display" not in command and not any(a.startswith("--display=") for a in command):
        # n live displays in one terminal overwrite each other; the plain one prints lines.
        command = [*command, "--display", "plain"]
    sizes = pool_sizes(shards, cores)
    if shards > cores:
        print(
            f"heval-inspect: {shards} shards on {cores} cores: each gets one container, "
            f"{shards - cores} more than the cores.",
            file=sys.stderr,
        )
    processes = []
    for argv, size in zip(shard_commands(command, shards), sizes, strict=True):
        print(f"heval-inspect: {POOL_SIZE_ENV}={size} {shlex.join(argv)}", file=sys.stderr)
        processes.append(subprocess.Popen(argv, env=os.environ | {POOL_SIZE_ENV: str(size)}))
    codes = _wait(processes)
    failed = [index for index, code in enumerate(codes, start=1) if code != 0]
    for index in failed:
        print(
            f"heval-inspect: shard {index}/{shards} failed (exit code {codes[index - 1]}): "
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
