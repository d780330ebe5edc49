"""Where programs run: a sandbox container (InContainer: programs as another user, policed, the
container checked after each), or, unsafely, this machine (OnThisMachine, `-T sandbox=local`).
Each is a `Place` (protocol.py): what the rest of the executor may know of where it runs.
"""

import os
import signal
import subprocess
import sys
import time

from .checks import (
    SCRATCH_AREAS,
    count_ipc_objects,
    count_sockets,
    count_tcp_opens,
    entries_of,
    remove_all,
)
from .clock import GVISOR_READING_SECONDS, POLL_SECONDS
from .counters import (
    CGROUP_CPU,
    CGROUP_MEMORY,
    CGROUP_OOM_KILLS,
    CGROUP_PIDS,
    CGROUP_SHMEM,
    HOST_CGROUP,
    HOST_CGROUP_CPU,
    HOST_CGROUP_MEMORY,
    HOST_MACHINE_CPU,
    host_cgroup,
    machine_cpus,
)
from .helpers import Decoy, Killer, end_as_killer
from .kernel import (
    CLOCK_TICKS,
    LIBC,
    Counter,
    busy_seconds,
    container_pids,
    in_timer_sleep,
    kept_open,
    other_pids,
    processes,
    proportional_bytes,
    tasks_of,
    write_proc,
)
from .protocol import Helpers
from .warden import GVISOR_REAP_SECONDS, REAP_SECONDS

# Programs run at the lowest priority, as a kernel user of their container's own: every
# container's processes share one kernel, whose per-user counters (pipe-buffer pages, inotify
# instances, POSIX message-queue bytes, pending signals, in-flight file descriptors, epoll
# watches) would otherwise be one budget for the programs of every container on the machine.
# The uid is PROGRAM_UID_BASE plus the low bits of the container's pid namespace's inode number,
# which the kernel gives no two live namespaces alike (`program_uid`): no two containers running
# at once have the same. The range lies above those that systemd hands to containers (which
# end at 0x6FFFFFFF) and below 2^31, which some programs treat as a negative uid.
PROGRAM_UID_BASE = 0x70000000
PROGRAM_NICE = 19


def program_uid() -> int:
    """The kernel uid of this container's programs: see PROGRAM_UID_BASE. Two pid namespaces
    that exist at once never have the same inode number (the kernel numbers them from one
    allocator, 0xF0000000 up, and frees a number only with its namespace); each container has
    one of its own."""
    return PROGRAM_UID_BASE + (os.stat("/proc/self/ns/pid").st_ino & 0x0FFFFFFF)


class InContainer:
    """The sandbox container: programs run as another user, end with everything they started,
    and after each the container is brought back to how it was before it, or its residue is
    reported."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            sys.exit(
                "The executor must start as root in the sandbox container (the compose file's "
                "`user: 0:0` and `cap_add`): it runs programs as another user, whom it polices."
            )
        self.cpu = Counter(CGROUP_CPU)
        # The container's own cgroup counters are absent under gVisor: its CPU time is read
        # where the host counts it (gVisor's own counts include waits for the host's CPU).
        self.host_cpu = Counter(host_cgroup(HOST_CGROUP_CPU) if self.cpu.fd is None else [])
        self.memory = Counter(CGROUP_MEMORY)
        if self.memory.fd is None:
            self.memory = Counter(host_cgroup(HOST_CGROUP_MEMORY))
        # And the whole machine's, and its CPUs: how busy the host's other work kept them.
        self.machine_cpu = Counter(
            [
                (pattern.format(root=HOST_CGROUP), key, unit)
                for pattern, key, unit in HOST_MACHINE_CPU
            ]
            if self.host_cpu.fd is not None
            else []
        )
        self.machine_cpus = machine_cpus()
        # Under runc the kernel's /proc/stat is the whole machine's (it is not the container's).
        self.proc_stat = kept_open("/proc/stat") if self.cpu.fd is not None else None
        self.tasks = Counter(CGROUP_PIDS)
        # gVisor's kernel has neither cgroup counters nor run delays: the CPU time and tasks of
        # the container's processes are read from /proc there instead.
        self.run_delays = os.path.exists("/proc/self/schedstat")
        # gVisor's own counts, where the host's cannot be read (Inspect's docker sandbox, which
        # allows no host mount under gVisor), count waits for a CPU as CPU time.
        self.cpu_counts_waits = self.cpu.fd is None and self.host_cpu.fd is None
        # Reading /proc costs far more under gVisor: there a program's time is read less often.
        self.reading_seconds = POLL_SECONDS if self.run_delays else GVISOR_READING_SECONDS
        self.reap_seconds = REAP_SECONDS if self.run_delays else GVISOR_REAP_SECONDS
        self.own_pids: set[int] = set()
        self.shmem = Counter(CGROUP_SHMEM)
        self.oom_kills = Counter(CGROUP_OOM_KILLS).read
        self.sockstat = kept_open("/proc/net/sockstat")
        # gVisor's network stack keeps a closed connection's port in TIME_WAIT, where no
        # container setting reaches and no /proc file shows it: there, a program that opened a
        # TCP connection leaves its container to be replaced (HumanEval's programs open none).
        self.snmp = kept_open("/proc/net/snmp") if self.sockstat is None else None
        self.tcp_opens = count_tcp_opens(self.snmp)
        self.program_uid = program_uid()
        self.decoy = Decoy()
        # gVisor's kernel has no out-of-memory killer of its own (the host's ends the whole
        # sandbox, which the pool replaces): there the decoy would only take memory.
        if self.run_delays:
            self.decoy.start()
        self.killer = Killer()
        self.killer.start(self.program_uid)
        self.killer_used = False  # since it was started: then it ends, and a new one is made
        self.killer_handles: list[int] = []  # in the warden: the killer's, as the request came
        self.killer_spent = False  # in the warden: it woke the killer for this program
        self.baseline: dict[str, float] = {}

    def settle(self) -> None:
        """Note what the idle container holds: its init and main process, this executor, the
        decoy, the warden and the socket pair between them."""
        self.own_pids = container_pids()
        self.baseline = {
            "processes": self.task_count(),
            "sockets": count_sockets(self.sockstat),
            "shared memory bytes": self.shmem.read(),
        }

    def helpers(self) -> tuple[Helpers, list[int]]:
        """What the warden is sent with each program about the executor's own helpers: the
        decoy's and the killer's pids, and the killer's pipe ends."""
        return {"decoy": self.decoy.pid, "killer": self.killer.pid}, self.killer.handles

    def out_of_memory_watch(self) -> list[int]:
        return self.decoy.watch

    def out_of_memory(self) -> bool:
        return self.decoy.died()

    def become_program(self, scratch: str) -> None:
        # The out-of-memory killer's choice after the decoy (the program may lower it to 0).
        write_proc("/proc/self/oom_score_adj", "1000")
        os.setpriority(os.PRIO_PROCESS, 0, PROGRAM_NICE)  # without CAP_SYS_NICE, for good
        os.setgroups([])
        os.setresgid(self.program_uid, self.program_uid, self.program_uid)
        # Every capability goes with root.
        os.setresuid(self.program_uid, self.program_uid, self.program_uid)
        os.mkdir(scratch, 0o700)

    def end_programs(self, main: int, own: set[int] | None = None) -> None:
        """In the warden: every process of the programs' user, at once (see the module's
        docstring). Another process does it, and dies: it takes real and saved uid KILLER_UID
        and effective uid the programs', whose kill(-1) reaches exactly the programs' processes
        (not root's: not the executor's, the warden's, the decoy's or init's), and which a
        program can neither signal nor trace (it has neither of the killer's uids). The warden
        itself never shares a uid with a program, so no program can ever set anything on it
        (`_own_attributes`); what a program may set on the killer (its affinity, its priority)
        dies with it. The killer is the executor's standing one (`Killer`), made while nothing
        ran: forking one now, when the container may be out of memory, could make the kernel's
        out-of-memory killer choose the executor.

        With `own` (the container's own processes), the programs' processes are first stopped,
        round after round, until none of them runs: a kernel whose kill(-1) does not reach
        every process at once (gVisor's) would let a process forked meanwhile escape."""
        if self.killer_handles:
            (trigger, done), self.killer_spent = self.killer_handles, True
            try:
                os.write(trigger, b"S" if own is not None else b"K")
                if os.read(done, 1) == b"D":
                    return
            except OSError:
                pass  # the standing killer is gone (it never is): one of its own, then
        killer = os.fork()
        if killer == 0:
            try:
                end_as_killer(self.program_uid, own)
            finally:
                os._exit(0)
        os.waitpid(killer, 0)

    def cpu_seconds(self, main: int | None) -> float:
        """CPU time used in the container so far: the program's processes and threads wherever
        they are (they cannot leave the container's cgroup), and the executor's and warden's
        work, which the program may cause. Under gVisor, the host's count of the container's
        CPU time (gVisor's own work for it included); without that (no mount of the host's
        cgroups), every process's own time and that of the children it reaped (all of the
        container's processes descend from its init, and the programs' from the warden, which
        reaps them), as gVisor counts them: waits for the host's CPU included."""
        if self.cpu.fd is not None:
            return self.cpu.read()
        if self.host_cpu.fd is not None:
            return self.host_cpu.read()
        ticks = sum(sum(map(int, fields[11:15])) for _, fields in processes(everyone=True))
        return ticks / CLOCK_TICKS

    def machine_seconds(self) -> float | None:
        """The CPU time the whole machine (the host) used so far, where the host's count can be
        read (under runc, the kernel's; under gVisor, with its cgroups mounted), else None."""
        if self.machine_cpu.fd is not None:
            return self.machine_cpu.read()
        return busy_seconds(self.proc_stat) if self.proc_stat is not None else None

    def sleeps_on_a_timer(self, main: int) -> bool:
        """Whether the program's main thread sleeps on a timer (`time.sleep`), read as the
        programs' user (a process's wait channel is for those who may trace it): the file
        system's uid and gid are theirs for that read only, the real, effective and saved ids
        stay root's, so no program can signal or trace this process meanwhile."""
        LIBC.setfsgid(self.program_uid)
        LIBC.setfsuid(self.program_uid)
        try:
            return in_timer_sleep(main)
        finally:
            LIBC.setfsuid(0)
            LIBC.setfsgid(0)

    def memory_held(self, main: int) -> float:
        """The memory the container's processes hold, as its cgroup charges it: each page they
        touched once, however many processes share it, and none they only reserved (a thread's
        stack, an allocator's arena); where no cgroup can be read, the program's processes'
        shares of what they hold (`proportional_bytes`)."""
        if self.memory.fd is not None:
            return self.memory.read()
        return proportional_bytes(
            pid for pid, _ in processes(everyone=True) if pid not in self.own_pids
        )

    def task_count(self) -> float:
        """The container's tasks (processes and threads, zombies included)."""
        if self.tasks.fd is not None:
            return self.tasks.read()
        return len(tasks_of(pid for pid, _ in processes(everyone=True)))

    def program_tasks(self, main: int) -> list[str]:
        """The /proc folders of the program's tasks: every task of the container but those of
        its own processes (init, its main process, this executor, the decoy, the warden)."""
        return tasks_of(other_pids(self.own_pids | {self.decoy.pid, self.killer.pid}))

    def clean(self, paths: list[str]) -> None:
        remove_all([path for area in SCRATCH_AREAS for path in entries_of(area)])
        if count_ipc_objects():
            # Only an object's owner may remove it: remove the programs' as their user.
            subprocess.run(
                ["ipcrm", "--all"],
                user=self.program_uid,
                group=self.program_uid,
                extra_groups=[],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )

    def residue(self, scratch: str) -> dict[str, int]:
        self.decoy.ensure()
        if self.killer_used:
            self.killer.replace(self.program_uid)
            self.killer_used = False
        # Reaped tasks leave the count at once; a socket closed by a killed process may take a
        # moment to finish closing (and under gVisor, a process's end takes longer).
        deadline = time.monotonic() + self.reap_seconds
        while True:
            found = {
                "processes": self.task_count(),
                "sockets": count_sockets(self.sockstat),
                "shared memory bytes": self.shmem.read(),
            }
            excess = {what: max(0, int(found[what] - self.baseline[what])) for what in found}
            if not any(excess.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        tcp_opens = count_tcp_opens(self.snmp)
        connections, self.tcp_opens = tcp_opens - self.tcp_opens, tcp_opens
        return excess | {
            "scratch entries": sum(len(entries_of(area)) for area in SCRATCH_AREAS),
            "System V IPC objects": count_ipc_objects(),
            "TCP connections, which gVisor keeps in TIME_WAIT": connections,
        }


class OnThisMachine:
    """`-T sandbox=local` (no container): programs run as the eval's user, and only what can be
    found of them (the warden's children, the program's session) is ended and only the scratch
    folder cleaned up; one reason why local execution is an unsafe opt-in."""

    def settle(self) -> None:
        pass

    def __init__(self) -> None:
        self.killer_handles: list[int] = []  # it has no killer
        self.killer_used = self.killer_spent = False

    def helpers(self) -> tuple[Helpers, list[int]]:
        return {"decoy": 0, "killer": 0}, []

    def out_of_memory_watch(self) -> list[int]:
        return []

    def out_of_memory(self) -> bool:
        return False  # not told apart on this machine: a program killed by it is "killed"

    def oom_kills(self) -> int:
        return 0

    def become_program(self, scratch: str) -> None:
        os.mkdir(scratch, 0o700)

    def end_programs(self, main: int, own: set[int] | None = None) -> None:
        """In the warden: its children (orphans come to it as they are killed, and it calls
        this again after every reaping) and the program's session."""
        me = os.getpid()
        for pid, fields in processes():
            if int(fields[1]) == me or (main and int(fields[3]) == main):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    run_delays = os.path.exists("/proc/self/schedstat")
    cpu_counts_waits = False
    reading_seconds = POLL_SECONDS
    machine_cpus = os.cpu_count() or 1

    proc_stat = kept_open("/proc/stat")

    def machine_seconds(self) -> float | None:
        return busy_seconds(self.proc_stat) if self.proc_stat is not None else None

    def sleeps_on_a_timer(self, main: int) -> bool:
        return in_timer_sleep(main)

    reap_seconds = REAP_SECONDS

    def cpu_seconds(self, main: int | None) -> float:
        """CPU time used so far by the program's session (its live processes and threads)."""
        ticks = sum(
            int(fields[11]) + int(fields[12])  # utime, stime
            for _, fields in processes()
            if main and int(fields[3]) == main
        )
        return ticks / CLOCK_TICKS

    def memory_held(self, main: int) -> float:
        """What the program's session holds: its processes' shares of their resident memory."""
        return proportional_bytes(
            pid for pid, fields in processes() if main and int(fields[3]) == main
        )

    def program_tasks(self, main: int) -> list[str]:
        """The /proc folders of the tasks of the program's session."""
        return tasks_of(pid for pid, fields in processes() if main and int(fields[3]) == main)

    def clean(self, paths: list[str]) -> None:
        remove_all(paths)

    def residue(self, scratch: str) -> dict[str, int]:
        return {"scratch entries": int(os.path.lexists(scratch))}
