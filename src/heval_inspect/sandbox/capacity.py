"""How many sandbox containers a machine holds: one container's share of the machine (its memory
and open files, from the compose file) and the pool size that follows, or HEVAL_POOL_SIZE's.

Both the pool (its size in one eval process) and `heval-inspect parallel` (the containers it
shares out among its shards) size themselves here.
"""

import os
from pathlib import Path

from ..errors import PoolSizeError
from ..host import usable_cores
from . import CONTAINER_OWN_TASKS, PROGRAM_TASKS, compose_service

POOL_SIZE_ENV = "HEVAL_POOL_SIZE"


def containers_the_machine_holds(
    machine_memory: int | None, file_table: int | None, container: dict
) -> int:
    """How many containers, each taking all it may (`container`: its memory, and the open files
    of all its processes), hold at most half of the machine's memory and of its file table
    together (at least one; one per usable core when nothing is known of the machine)."""
    shares = [
        (total // 2) // need
        for total, need in ((machine_memory, container["memory"]), (file_table, container["files"]))
        if total
    ]
    return max(1, min(shares, default=usable_cores()))


def pool_size(machine_memory: int | None, file_table: int | None, container: dict) -> int:
    """How many containers the pool starts: HEVAL_POOL_SIZE, else one per usable core, never more
    than the machine holds (see `containers_the_machine_holds`): more than that on request is
    refused, since the programs of one run could then starve the machine."""
    most = containers_the_machine_holds(machine_memory, file_table, container)
    value = os.environ.get(POOL_SIZE_ENV)
    if value is None:
        return min(usable_cores(), most)
    if not value.isdigit() or int(value) < 1:
        raise PoolSizeError(f"{POOL_SIZE_ENV} must be a whole number of containers, 1 or more.")
    if int(value) > most:
        raise PoolSizeError(
            f"{POOL_SIZE_ENV}={value}: each sandbox container may take "
            f"{container['memory'] >> 20} MiB of memory and hold {container['files']:,} open "
            f"files, and {value} of them could take more than half of this machine's "
            f"{(machine_memory or 0) >> 30} GiB of memory or {file_table or 0:,}-file table; "
            f"use at most {most}."
        )
    return int(value)


def container_share(compose_file: str) -> dict:
    """The most one container of the compose file's service can take from the machine: its
    memory, and the open files of all its processes (its programs' at most PROGRAM_TASKS, and
    its own). What the kernel counts per user (pipe buffers, message-queue bytes, pending
    signals, inotify and epoll watches) is per container, since each container's programs
    have a uid of their own, and is charged to the container's memory."""
    service = compose_service(compose_file)
    memory = service["mem_limit"]
    multiplier = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(str(memory)[-1:].lower(), 1)
    files = service["ulimits"]["nofile"]
    per_process = files["hard"] if isinstance(files, dict) else files
    return {
        "memory": int(str(memory).rstrip("kKmMgG")) * multiplier,
        "files": (PROGRAM_TASKS + CONTAINER_OWN_TASKS) * per_process,
    }


def file_table() -> int | None:
    """The machine's limit of open files (Linux; None elsewhere, where the engine runs in a VM)."""
    try:
        return int(Path("/proc/sys/fs/file-max").read_text())
    except (OSError, ValueError):
        return None
