"""The program's time: its own (wall-clock time less what a busy machine held it back) or the CPU
time its container used, whichever is more; when it is read, and how often. It knows the place
only through `Place` and nothing of output, reports or checks.
"""

import os

from .kernel import CPUS, run_delay, task_stat
from .protocol import Place

POLL_SECONDS = 0.02
# When a program's own time is first read (then at every poll): before this much wall-clock time
# it cannot have reached any limit, and most programs have ended.
FIRST_READING_SECONDS = 0.25
GVISOR_READING_SECONDS = 0.1


class OwnTime:
    """The program's own time: wall-clock time since it started, less the time it was held back
    by a busy machine. On an idle machine that is its wall-clock time, the reference harness's
    measure; on a busy one it does not grow while the program waits for a CPU, so load cannot
    make it time out.

    It is summed over the intervals between readings (every poll from the first reading on).
    An interval counts whole, less the longest wait for a CPU (the kernel's run delay,
    /proc/<task>/schedstat) of any of the program's tasks (processes and threads) in it, and of
    this executor's too if the program's stderr pipe was full enough that the program may have
    been waiting for it to be drained. So a program waiting for its own threads or processes,
    or for the executor, is not charged for their waits either. Where the kernel reports no run
    delays (gVisor's), an interval at whose end any of the program's tasks was running or
    waiting to run counts as the CPU time the container's processes used in it, and one at
    whose end all of them slept counts whole less the waits for the host's CPU of the program's
    tasks in it (and of this executor's, if its stderr pipe was full enough that it may have
    been waiting for it), which gVisor's kernel counts as their CPU time (so what their counts
    grew by beyond the whole container's real CPU time, the host's count, was waiting), and no
    less than the container's CPU time in it. Tasks that hand work to each other (a pipe
    between its processes) show asleep while a woken one waits for the host's CPU. The tasks'
    waits come off at most the share of the interval in which work outside the container kept
    every CPU of the machine busy (at least, from the host's counts): their waits for one
    another on the container's own CPU are the program's. A program that sleeps is charged its
    sleep: asleep, its tasks' counts do not grow, and a sleep with its pipe full is charged too,
    as the executor, with little to drain, hardly waits.

    Waits that the program causes itself (its own processes or threads keeping the CPU busy, a
    lowered priority) are bounded by the CPU time of the container's processes, which `read`
    counts as well: the program's time is the larger of the two. Where that CPU time counts
    waits for a CPU as well (gVisor's own counts), several of the program's tasks waiting
    together would be counted as several CPUs' time: there it counts no more than the interval
    in each interval, the container's one CPU.
    """

    def __init__(self, place: "Place", started: float, limit: float, cpu: "CpuMark") -> None:
        self.place, self.cpu_at_start = place, cpu
        self.at = started
        # Its own time cannot grow faster than the wall clock: before this it cannot have
        # reached the limit, and it is not read (most programs end long before it).
        self.next_reading = started + min(FIRST_READING_SECONDS, limit / CPUS)
        self.seconds = 0.0
        self.delays: dict[str, float] = {}  # each task's run delay at the last reading
        self.executor_delay = run_delay("/proc/self")
        self.others = 0.0  # the CPU time of the container's other processes at the last reading
        self.one_cpu = 0.0  # that CPU time, at most one CPU's in each interval
        # Under gVisor: this executor's CPU time, and each of the program's tasks', at the last
        # reading (gVisor's counts, waits for the host's CPU included).
        self.executor = sum(os.times()[:2])
        self.task_seconds: dict[str, float] = {}
        # Under runc: the time since it started, its tasks' waits in it (see read), and how much
        # of it work outside the container kept every CPU busy.
        self.elapsed = self.waited = self.forgivable = 0.0
        self.machine = place.machine_seconds()  # the host's CPU time, where it can be read

    def read(self, now: float, main: int, stderr_full: bool) -> float | None:
        """The program's time until `now`: its own time, or the CPU time the container's other
        processes than this executor used since it started (its processes and threads, and the
        warden's work for it), whichever is more. None when it is not read yet. `stderr_full`:
        a read of its stderr since the last reading found the pipe full enough to hold back a
        writer (its size less PIPE_BUF)."""
        if now < self.next_reading:
            return None
        self.next_reading = now + self.place.reading_seconds
        interval, self.at = max(0.0, now - self.at), now
        others = self.cpu_at_start.since(main)
        # The CPU time the container's other processes used in the interval, at most one CPU's
        # (the container's; only ever more where it counts waits for a CPU: see above). Under
        # gVisor that is the whole container's (see CpuMark.since).
        container = max(0.0, others - self.others)
        used = min(interval, container)
        self.others, self.one_cpu = others, self.one_cpu + used
        tasks = self.place.program_tasks(main)
        executor, self.executor = self.executor, sum(os.times()[:2])
        if self.place.run_delays:
            delays = {task: run_delay(task) for task in tasks}
            main_task = f"/proc/{main}/task/{main}"
            if self.place.sleeps_on_a_timer(main):
                # Its main thread sleeps by its own choice: no other task's wait held it back.
                waited = delays.get(main_task, 0.0) - self.delays.get(main_task, 0.0)
            else:
                waited = max(
                    (delay - self.delays.get(task, 0.0) for task, delay in delays.items()),
                    default=0.0,
                )
            executor_delay = run_delay("/proc/self")
            if stderr_full:
                waited = max(waited, executor_delay - self.executor_delay)
            self.delays, self.executor_delay = delays, executor_delay
            # Waits come off only as far as work outside the container kept every CPU busy: a
            # wait for the container's own CPU (its processes, threads, and this executor's
            # work for them, such as draining what it writes) is the program's.
            busy_elsewhere = self._busy_elsewhere(interval, container + self.executor - executor)
            self.forgivable += interval * busy_elsewhere
            self.waited += waited
            self.elapsed += interval
            # The kernel adds a wait to a task's run delay when the wait ends, so what is read
            # now may have begun in earlier intervals, which were counted whole: it comes off
            # the sum so far, not off this interval alone.
            self.seconds = max(0.0, self.elapsed - min(self.waited, self.forgivable))
        else:
            busy_elsewhere = self._busy_elsewhere(interval, container)
            stats = {task: task_stat(task) for task in tasks}
            seconds = {task: task_seconds for task, (_, task_seconds) in stats.items()}
            grew = sum(
                now_seconds - self.task_seconds.get(task, 0.0)
                for task, now_seconds in seconds.items()
            )
            main_task = f"/proc/{main}/task/{main}"
            main_state, main_seconds = stats.get(main_task, (b"", 0.0))
            main_wrote = main_seconds > self.task_seconds.get(main_task, 0.0)
            if stderr_full:
                grew += self.executor - executor
            self.task_seconds = seconds
            if stderr_full and main_state != b"R" and not main_wrote:
                # Its stderr full of what its other tasks write, while its main thread sleeps
                # and ran not at all: gVisor shows no wait channel, so a sleep cannot be told
                # from a wait for those tasks; a sleep is not held back by the host's load,
                # and the flood is drained as fast as the executor can. The interval counts
                # whole (a main thread that waits for a flooding task is charged its wait).
                self.seconds += interval
            elif any(state == b"R" for state, _ in stats.values()):
                self.seconds += used
            else:
                # Asleep at its end, the program may have slept, or waited for the host's CPU
                # between hand-offs of its own tasks (a pipe between its processes, a lock between
                # its threads: a woken task shows asleep until it runs) or, with its stderr full,
                # of this executor. gVisor's counts of those tasks grew by their waits for the
                # host's CPU as well as by their CPU time: beyond the whole container's real CPU
                # time (the host's count) that is waiting, at least. A sleep grows no count.
                waited = max(0.0, grew - used)
                if not stderr_full:
                    # Its tasks' waits for one another (bursts of its own threads sharing the
                    # container's CPU) are its own: only the host's other work, which kept every
                    # CPU busy for this share of the interval, could hold them back.
                    waited = min(waited, interval * busy_elsewhere)
                self.seconds += max(used, interval - waited)
        return max(self.seconds, self.one_cpu if self.place.cpu_counts_waits else others)

    def _busy_elsewhere(self, interval: float, container: float) -> float:
        """The share of the interval in which work outside the container kept every CPU of the
        machine busy, at least, from the host's counts (0 where they cannot be read): only then
        could it hold back a task of the program. Outside work that took E CPU-seconds of C
        CPUs in an interval of T seconds left none of them free for at least E - (C - 1) T."""
        machine, self.machine = self.machine, self.place.machine_seconds()
        if machine is None or self.machine is None or interval <= 0:
            return 0.0
        elsewhere = self.machine - machine - container
        all_busy = elsewhere - (self.place.machine_cpus - 1) * interval
        return min(1.0, max(0.0, all_busy / interval))


class CpuMark:
    """The CPU time used in the container by other processes than this executor, at a moment."""

    def __init__(self, place: "Place") -> None:
        self.place = place
        self.container, self.executor = place.cpu_seconds(None), sum(os.times()[:2])

    def since(self, main: int) -> float:
        """The CPU time they used since then. Under gVisor, the whole container's: gVisor's
        kernel counts the executor's waits for the host's CPU as its CPU time, so taking that
        off the container's real CPU time (the host's count) would leave too little on a busy
        host (even less than nothing). On an idle machine the executor's work (its readings,
        draining the program's output) shares the container's one CPU with the program, and
        adds to the program's wall-clock time as much."""
        executor = sum(os.times()[:2]) - self.executor if self.place.run_delays else 0.0
        return self.place.cpu_seconds(main) - self.container - executor
