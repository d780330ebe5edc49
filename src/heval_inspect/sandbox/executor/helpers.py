"""The executor's two standing helpers: the decoy (the out-of-memory killer's first choice) and the
killer (ends every process of the programs' user at once, and is replaced after each use).
They act when told (the killer) or by dying (the decoy); when is the warden's and the run's.
"""

import os
import signal

from .kernel import (
    LIBC,
    PR_SET_PDEATHSIG,
    close_all_but,
    container_pids,
    end_watch,
    other_pids,
    prctl,
    task_stat,
    write_proc,
)

# How many times, at most, the programs' processes are stopped before they are killed, where one
# kill may not reach them all at once (InContainer.end_programs); and the states of a process that
# can fork no more.
STOP_ROUNDS = 50
STOPPED = (b"T", b"t", b"Z", b"X", b"")


# The real and saved uid of the process that ends a program (`InContainer.end_programs`): no
# process of the container has it, so that no program can signal that process while it works.
KILLER_UID = 65533
# Memory the decoy holds, freed when the out-of-memory killer takes it: the executor's time to
# end the program before the container runs out again.
DECOY_BYTES = 256 << 20


class Decoy:
    """A root process at oom_score_adj 1000 that holds DECOY_BYTES and waits: when the container
    runs out of memory the kernel kills it before any process at a lower score, however small
    (the executor), and its end (a pidfd that becomes readable) tells the executor to end the
    program."""

    def __init__(self) -> None:
        self.pid = 0
        self.watch: list[int] = []
        self.started = False  # it never is under gVisor (InContainer)

    def start(self) -> None:
        self.started = True
        ready, ready_signal = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                os.closerange(3, ready_signal)  # the executor's pipes and sockets are not its
                os.closerange(ready_signal + 1, 65536)
                write_proc("/proc/self/oom_score_adj", "1000")
                held = b"\1" * DECOY_BYTES  # every page touched, so charged to the container
                os.write(ready_signal, b"R")
                while held:
                    signal.pause()
            finally:
                os._exit(0)
        os.close(ready_signal)
        os.read(ready, 1)
        os.close(ready)
        self.pid, self.watch = pid, end_watch(pid)

    def died(self) -> bool:
        """Whether the decoy has died since it was started (then it is reaped: see `ensure`)."""
        if self.pid and os.waitpid(self.pid, os.WNOHANG)[0]:
            for fd in self.watch:
                os.close(fd)
            self.pid, self.watch = 0, []
            return True
        return False

    def ensure(self) -> None:
        """A live decoy, if it was started: started again if it died."""
        self.died()
        if self.started and not self.pid:
            self.start()


def end_as_killer(program_uid: int, own: set[int] | None) -> None:
    """In a process of its own, which this makes a process no program can signal: end every
    process of the programs' uid (see InContainer.end_programs)."""
    os.setresuid(KILLER_UID, program_uid, KILLER_UID)
    if own is not None:
        own = own | {os.getpid()}
        for _ in range(STOP_ROUNDS):
            LIBC.kill(-1, signal.SIGSTOP)
            if all(task_stat(f"/proc/{pid}")[0] in STOPPED for pid in other_pids(own)):
                break
    LIBC.kill(-1, signal.SIGKILL)


class Killer:
    """A root process, the executor's child, that waits to end the programs' processes once,
    when the warden writes "K" (or "S": stop them first, see InContainer.end_programs) to its
    trigger, and answers "D" when it has. A new one is made after each use, once the program
    is gone. The warden gets its two pipe ends with each program's request."""

    def __init__(self) -> None:
        self.pid = 0
        self.handles: list[int] = []  # the trigger's write end, the answer's read end

    def start(self, program_uid: int) -> None:
        trigger, trigger_end = os.pipe()
        answer_end, answer = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                close_all_but(trigger, answer)
                own = container_pids()
                mode = os.read(trigger, 1)
                if mode:
                    end_as_killer(program_uid, own if mode == b"S" else None)
                    os.write(answer, b"D")
            finally:
                os._exit(0)
        os.close(trigger)
        os.close(answer)
        self.pid, self.handles = pid, [trigger_end, answer_end]

    def replace(self, program_uid: int) -> None:
        """A new killer, once this one has been used (it ends on its own: it is reaped)."""
        os.waitpid(self.pid, 0)
        for fd in self.handles:
            os.close(fd)
        self.start(program_uid)
