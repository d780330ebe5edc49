"""What the pool sandbox costs per program, apart from the program: N programs that do nothing.

Starts the pool (as `heval-inspect score` does: one container per usable core), runs a few
programs to warm it, then N copies of a program that defines and calls an empty `check`, as many
at a time as `heval-inspect score` runs them, and prints the wall time, the CPU of the whole
machine per program (the containers: executor, warden, each program's forked process; Docker's
daemon, shims and `docker` clients; this process) and this process's own share. The programs' own
work is nil, so the figure is the isolation's cost: forking, dropping privileges and limits,
reporting, ending and reaping every process, cleaning and checking the container, and carrying
request and answer through Docker.

    python benchmarks/pool_overhead.py [--programs 2000]

To compare two versions of the code, run it from each in turn, several times (the machine's speed
drifts): `PYTHONPATH=OTHER_CHECKOUT/src python benchmarks/pool_overhead.py`.
"""

import argparse
import asyncio
import os
import time

from throughput import machine_cpu_seconds  # this folder's: the same measure as its runs

from heval_inspect.sandbox.pool_sandbox import standalone_pool

PROGRAM = "def check(candidate):\n    pass\n\ncheck(None)\n"
REQUEST = {
    "program": PROGRAM,
    "seconds": 3.0,
    "wall_seconds": 6.0,
    "memory_bytes": 1 << 30,
    "file_bytes": 1 << 24,
    "tasks": 64,
}
WARM_UP = 20


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def measure(programs: int) -> None:
    pool = (await standalone_pool()).pool
    for _ in range(WARM_UP):
        await pool.run(REQUEST, 10)
    left = programs

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            execution = await pool.run(REQUEST, 10)
            assert execution.status == "passed", execution

    wall, machine, own = time.monotonic(), machine_cpu_seconds(), own_cpu_seconds()
    await asyncio.gather(*(worker() for _ in range(pool.capacity + pool.size)))
    wall = time.monotonic() - wall
    machine, own = machine_cpu_seconds() - machine, own_cpu_seconds() - own
    print(
        f"{programs} empty programs in {pool.size} containers: wall {wall:.2f} s "
        f"({programs / wall:.0f}/s); CPU of the whole machine {1e3 * machine / programs:.2f} ms "
        f"per program, of which this process {1e3 * own / programs:.2f} ms; "
        f"idle cores {(os.cpu_count() or 1) * wall - machine:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=2000)
    asyncio.run(measure(parser.parse_args().programs))


if __name__ == "__main__":
    main()
