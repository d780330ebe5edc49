"""The executor's calls into the kernel: libc's prctl, /proc's processes and tasks (their states,
CPU times, run delays and memory), kernel files kept open and read again, and pidfds. Pure
readings and small calls, with no policy: what to do with them is the other modules'.
"""

import ctypes
import os
from collections.abc import Iterable, Iterator
from typing import Any

# The machine's CPUs, read once (glibc reads /sys for it on every call): no program can use more.
CPUS = os.cpu_count() or 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc/<pid>/stat's times


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


LIBC = ctypes.CDLL(None, use_errno=True)  # looked up once, not in each program's process


def prctl(option: int, value: int) -> None:
    if LIBC.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def write_proc(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def kept_open(path: str) -> int | None:
    """A kernel file opened once, to be read again and again (`read_whole`); None if absent."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def read_whole(fd: int) -> bytes:
    """A kernel file kept open, as it is now: each read from its start makes it anew, without
    the open and close per read that would cost each program a few more system calls."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 65536, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _counter_value(text: bytes, key: bytes | None) -> int | None:
    if key is None:
        return int(text)
    for line in text.splitlines():
        name, _, value = line.partition(b" ")
        if name == key:
            return int(value)
    return None


class Counter:
    """The first of several places a kernel counter may be found (cgroup v2, then v1), kept
    open; 0 where none is."""

    def __init__(self, candidates: Iterable[tuple[Any, ...]]) -> None:  # (path, key, [unit])
        self.fd, self.key, self.unit = None, None, 1.0
        for path, key, *unit in candidates:
            fd = kept_open(path)
            if fd is None:
                continue
            key = key and key.encode()
            try:
                if _counter_value(read_whole(fd), key) is not None:
                    self.fd, self.key, self.unit = fd, key, (unit[0] if unit else 1)
                    return
            except (OSError, ValueError):
                pass
            os.close(fd)

    def read(self) -> float:
        if self.fd is None:
            return 0
        return (_counter_value(read_whole(self.fd), self.key) or 0) * self.unit


def processes(everyone: bool = False) -> Iterator[tuple[int, list[bytes]]]:
    """(pid, stat fields after the name) of every process but this one (or every one)."""
    me = 0 if everyone else os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                yield int(entry), stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile


def container_pids() -> set[int]:
    """Every process in the container (in its pid namespace)."""
    return {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}


def other_pids(own: set[int]) -> set[int]:
    """The container's processes that are not one of these."""
    return container_pids() - own


def close_all_but(*kept: int) -> None:
    """Close every file descriptor above 2 but these."""
    ordered = sorted(set(kept))
    for low, high in zip([2, *ordered], [*ordered, 65536], strict=True):
        os.closerange(low + 1, high)


def end_watch(pid: int) -> list[int]:
    """A descriptor that becomes readable when the process ends (a pidfd), so that its end wakes
    the loop at once; none on kernels older than 5.3, where the loop finds it within a poll."""
    try:
        return [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        return []


def busy_seconds(proc_stat: int) -> float:
    """The CPU time the machine's CPUs were busy so far: the kernel's /proc/stat, kept open
    (user, nice, system, irq, softirq, steal; guest time is counted in user already)."""
    ticks = [int(each) for each in read_whole(proc_stat).split(b"\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS


# The wait channels of a thread in `time.sleep` (clock_nanosleep, nanosleep).
TIMER_SLEEPS = (b"hrtimer_nanosleep", b"do_nanosleep", b"clock_nanosleep")


def in_timer_sleep(pid: int) -> bool:
    """Whether the process's main thread sleeps on a timer (its wait channel: TIMER_SLEEPS)."""
    try:
        with open(f"/proc/{pid}/wchan", "rb") as wchan:
            return wchan.read().strip() in TIMER_SLEEPS
    except OSError:
        return False


def run_delay(task: str) -> float:
    """How long the task (a /proc folder) has waited for a CPU so far, in seconds; 0 if gone."""
    try:
        with open(f"{task}/schedstat", "rb") as schedstat:
            return int(schedstat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def task_stat(task: str) -> tuple[bytes, float]:
    """The task's state (R: running or waiting to run; S, D: asleep; ...; b"" if gone) and its
    CPU time in seconds (0 if gone)."""
    try:
        with open(f"{task}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[0], (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return b"", 0.0


def proportional_bytes(pids: Iterable[int]) -> float:
    """The processes' proportional set sizes together (each shared page divided among those that
    share it: /proc/<pid>/smaps_rollup's Pss), in bytes."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
                for line in rollup:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) << 10
                        break
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return total


def tasks_of(pids: Iterable[int]) -> list[str]:
    """The /proc folders of every task (process or thread) of these processes."""
    tasks = []
    for pid in pids:
        try:
            tasks += [f"/proc/{pid}/task/{tid}" for tid in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue  # gone meanwhile
    return tasks
