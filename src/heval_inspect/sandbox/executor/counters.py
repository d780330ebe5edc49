"""Where the kernel counts the container's CPU time, memory, tasks and out-of-memory kills: its
own cgroup (v2, then v1) under runc, and under gVisor the host's, mounted read-only
(compose.runsc.yaml); and the whole machine's CPU time, from which the clock tells a busy host.
Only where and how to read them: what a count means for a program is the clock's and places'.
"""

import os
import socket
from collections.abc import Iterable

# The container's CPU time used so far (cgroup v2, then v1).
CGROUP_CPU = (
    ("/sys/fs/cgroup/cpu.stat", "usage_usec", 1e-6),
    ("/sys/fs/cgroup/cpuacct/cpuacct.usage", None, 1e-9),
    ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", None, 1e-9),
)
# Under gVisor, whose kernel counts a thread's waits for the host's CPU as its CPU time: the host's
# cgroup file systems (compose.runsc.yaml mounts them, read-only, where only root can look), in
# which the container's own cgroup counts the CPU time it really used. Docker names that cgroup
# after the container's id, whose first 12 digits are the container's hostname (cgroup v2, then
# v1; Docker's cgroupfs driver, then its systemd driver).
HOST_CGROUP = "/run/heval/host-cgroup"
HOST_CGROUP_CPU = (
    ("{root}/docker/{id}*/cpu.stat", "usage_usec", 1e-6),
    ("{root}/system.slice/docker-{id}*.scope/cpu.stat", "usage_usec", 1e-6),
    ("{root}/*/docker/{id}*/cpuacct.usage", None, 1e-9),
    ("{root}/*/system.slice/docker-{id}*.scope/cpuacct.usage", None, 1e-9),
)
# The memory the container's processes hold, as its cgroup charges it: the pages they touched
# and the kernel's memory for them (v2, then v1). Under gVisor, where the host counts it.
CGROUP_MEMORY = (
    ("/sys/fs/cgroup/memory.current", None),
    ("/sys/fs/cgroup/memory/memory.usage_in_bytes", None),
)
HOST_CGROUP_MEMORY = (
    ("{root}/docker/{id}*/memory.current", None, 1),
    ("{root}/system.slice/docker-{id}*.scope/memory.current", None, 1),
    ("{root}/memory/docker/{id}*/memory.usage_in_bytes", None, 1),
    ("{root}/memory/system.slice/docker-{id}*.scope/memory.usage_in_bytes", None, 1),
)
# The whole machine's CPU time, in the root of the host's hierarchies (cgroup v2, then v1), and
# where v1 counts it for each CPU (how many the machine has).
HOST_MACHINE_CPU = (
    ("{root}/cpu.stat", "usage_usec", 1e-6),
    ("{root}/cpuacct/cpuacct.usage", None, 1e-9),
    ("{root}/cpu,cpuacct/cpuacct.usage", None, 1e-9),
)
HOST_MACHINE_PERCPU = (
    "{root}/cpuacct/cpuacct.usage_percpu",
    "{root}/cpu,cpuacct/cpuacct.usage_percpu",
)
CGROUP_PIDS = (("/sys/fs/cgroup/pids.current", None), ("/sys/fs/cgroup/pids/pids.current", None))
# How many processes of the container the kernel's out-of-memory killer has killed (v2, then v1).
CGROUP_OOM_KILLS = (
    ("/sys/fs/cgroup/memory.events", "oom_kill"),
    ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
)
CGROUP_SHMEM = (
    ("/sys/fs/cgroup/memory.stat", "shmem"),
    ("/sys/fs/cgroup/memory/memory.stat", "total_shmem"),
)


def host_cgroup(
    patterns: Iterable[tuple[str, str | None, float]],
) -> list[tuple[str, str | None, float]]:
    """Where the host counts this container's CPU time or memory (HOST_CGROUP_CPU,
    HOST_CGROUP_MEMORY), if it is mounted."""
    container = socket.gethostname()
    if not os.path.isdir(HOST_CGROUP) or len(container) != 12:
        return []
    import glob  # only here: the executor starts once for each program in the docker sandbox

    found = []
    for pattern, key, unit in patterns:
        # The v1 hierarchies' names ("cpuacct", "cpu,cpuacct") may lead to one counter.
        for path in sorted(glob.glob(pattern.format(root=HOST_CGROUP, id=container)))[:1]:
            found.append((path, key, unit))
    return found


def machine_cpus() -> int:
    """The host's CPUs: as many as its root cgroup counts (v1), else as many as this kernel
    reports."""
    for pattern in HOST_MACHINE_PERCPU:
        try:
            with open(pattern.format(root=HOST_CGROUP), "rb") as counts:
                return max(1, len(counts.read().split()))
        except OSError:
            continue
    return os.cpu_count() or 1
