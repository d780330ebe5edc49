"""After each program: the scratch areas emptied, System V IPC objects removed, and the counts the
container is checked against (its sockets, IPC objects and TCP connections). What the container
holds beyond its baseline is the answer's residue (places.py compares). It neither
starts nor ends programs, and knows nothing of their time.
"""

import ctypes
import os
import subprocess

from .kernel import LIBC, read_whole

# Writable places a program can leave files in (the root file system is read-only): /tmp (which
# holds each program's scratch folder), POSIX shared memory and POSIX message queues.
SCRATCH_AREAS = ("/tmp", "/dev/shm", "/dev/mqueue")
# System V IPC objects in the container's IPC namespace, as the kernel counts them (the first
# int of shm_info and msginfo, the eighth of seminfo: segments, queues, semaphore sets). gVisor's
# kernel has no /proc/sysvipc, but answers these.
IPC_COUNTS = (("shmctl", 14, 0), ("msgctl", 12, 0), ("semctl", 19, 28))  # *_INFO, offset
# The container's sockets (its own network namespace): the kernel's count of every kind in use,
# and TCP connections in TIME_WAIT. (Listing /proc/net/tcp instead walks the machine's whole
# TCP table: milliseconds.)
SOCKET_COUNTERS = (("sockets:", "used"), ("TCP:", "tw"))  # in /proc/net/sockstat


def remove_all(paths: list[str]) -> None:
    """Remove files and trees, however deep (GNU rm walks them without recursion or long paths),
    unwritable (the executor may override permissions) or strangely named. Most programs leave
    only their empty scratch folder and report FIFO, which go without starting `rm`."""
    stubborn = []
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            stubborn.append(path)
    if stubborn:
        subprocess.run(
            ["rm", "-rf", "--one-file-system", "--", *stubborn],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


def entries_of(area: str) -> list[str]:
    try:
        return [os.path.join(area, name) for name in os.listdir(area)]
    except FileNotFoundError:
        return []


def count_sockets(sockstat: int | None) -> int:
    if sockstat is None:
        return 0
    counts: dict[tuple[str, str], int] = {}
    try:
        for line in read_whole(sockstat).decode().splitlines():
            name, *fields = line.split()
            pairs = zip(fields[::2], fields[1::2], strict=False)  # a key without a value: left out
            counts |= {(name, key): int(value) for key, value in pairs}
    except (OSError, ValueError):
        return 0
    return sum(counts.get(counter, 0) for counter in SOCKET_COUNTERS)


def count_ipc_objects() -> int:
    """System V IPC objects in the container (see IPC_COUNTS)."""
    found = 0
    for call, command, offset in IPC_COUNTS:
        arguments = (0, 0, command) if call == "semctl" else (0, command)
        if getattr(LIBC, call)(*arguments, _IPC_INFO) >= 0:
            found += ctypes.c_int.from_buffer(_IPC_INFO, offset).value
    return found


_IPC_INFO = ctypes.create_string_buffer(128)  # large enough for shm_info, msginfo and seminfo


def count_tcp_opens(snmp: int | None) -> int:
    """TCP connections opened in the container's network namespace so far (/proc/net/snmp)."""
    if snmp is None:
        return 0
    names, values = [
        line.split()[1:] for line in read_whole(snmp).splitlines() if line.startswith(b"Tcp:")
    ][:2]
    counts = dict(zip(names, values, strict=True))
    return int(counts[b"ActiveOpens"]) + int(counts[b"PassiveOpens"])
