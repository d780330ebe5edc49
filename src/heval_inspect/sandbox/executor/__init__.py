"""Runs untrusted programs inside the sandbox container and reports a JSON verdict for each.

The package is sent into the container as one `python3 -I -c` source (sandbox/bundle.py: its
modules, compressed, behind a short loader), so the image needs nothing of ours baked in; inside
it imports nothing but the standard library (and numpy, where the reference has it loaded), and
nothing of heval_inspect. A request is one JSON object, a `Request`, its answer one JSON line, an
`Answer` (protocol.py).

Run with no argument, it answers the one request on stdin (one `docker exec` per program). Run as
`serve`, it answers one request per line of stdin, in order, until EOF or an answer with residue
(after which it runs nothing more), so a long-lived container runs many programs through one
process. With `local` (the unsafe `-T sandbox=local`, no container), it runs
programs as the user running the eval and cleans up only what it can find of them.

The processes in the container, and why each is there:

    executor   root, with only KILL, SETUID, SETGID, DAC_OVERRIDE and FOWNER; not dumpable
    ├─ decoy   root, oom_score_adj 1000, holding DECOY_BYTES: the out-of-memory killer's victim
    ├─ killer  root, waiting to end a program's processes once (Killer; replaced after use)
    └─ warden  root, a child subreaper, for as long as the executor runs
       └─ each program, and every process it leads to: the container's own user (see
          PROGRAM_UID_BASE), no capability, nice 19, at most `tasks` tasks in all

- The program cannot reach the processes that police it: they run as root, so it can neither
  signal, stop, trace, renice nor read them, and at nice 19 against their 0 it cannot starve them.
- Every process the program leads to is the warden's, never the executor's: the warden is the
  program's parent, so a clone(CLONE_PARENT) makes a child of the warden, and as a child
  subreaper it inherits every orphan (double forks, new sessions). To end a program the warden
  wakes the killer, which takes real and saved uid KILLER_UID and effective uid the programs'
  and calls kill(-1, SIGKILL) once: that reaches every process of the programs' user and
  nothing else (not root's), a program cannot signal the killer (it has neither of its real
  and saved uids), and the kernel delivers the signal to all of them at once: a process being
  forked meanwhile either gets it too or is never created. The warden itself never takes a
  program's uid, so no program can ever change anything of it (InContainer.end_programs).
  The warden then reaps until it has no child left and says so. So a program ends with
  everything it started, zombies included, and the container's pids cgroup counter (the
  kernel's own count, which no process can hide from) is checked to be back at its baseline.
- A program can always set its own oom_score_adj back to 0, and the executor's cannot be lowered
  below 0, without CAP_SYS_RESOURCE (which some hosts cannot grant at all); and memory a program
  holds in kernel buffers (sockets, pipes) shows in no process's size, so the executor could be
  the largest process left. The decoy, at 1000, is the kernel's first victim whatever the
  program does; when it dies the executor ends the program at once (the memory it held gives
  the executor that time), and the program's verdict says the out-of-memory killer ended it.
- A program's time is the larger of its own time (wall-clock time less the waits for a CPU of
  its tasks, and of the executor while its output waits: OwnTime) and the CPU time its
  container's processes other than the executor used since it started; what it prints costs the
  executor nothing (it is dropped), and reads of a few bytes of stderr or the report FIFO wait
  for the next poll, so the work a program can make the executor do stays small.

Each program runs in a process forked from the warden, a copy of this executor made before it
ran any program (as the reference harness forks its workers): forking an interpreter that has
already started costs about a millisecond, where starting a new one costs tens. The program
passes only if its harness reports, on a FIFO it opens by name only to report and with a
per-run nonce, that `exec` of the whole program (tests included) returned normally: an early
`exit(0)`, `os._exit(0)`, `raise SystemExit` or printing a success marker is a fail, as in the
reference harness, whose `exec` treats any BaseException as a failure, and whose verdict for a
program that dies without reporting is "timed out". When several processes report (a program
that forked and whose copies both reach the end), the first report counts, as the first entry
of the reference's result list does.

After every program the scratch areas are emptied (however deep, unwritable or oddly named their
trees) and System V IPC objects removed, and then the container is checked: processes, scratch
entries, IPC objects, shared memory and sockets as before any program. What is not is the
answer's `residue`; the pool replaces a container whose residue is not empty.

The modules, each importing only those above it (tests/test_bundle.py holds it):

    protocol   the request, the answer, the causes, and the `Place` the others may use
    world      the reference worker's world: loaded modules, caches, environment, the guard
    kernel     libc's prctl, /proc's processes and tasks, kernel files kept open, pidfds
    counters   where the kernel counts the container's CPU time, memory, tasks, OOM kills
    checks     the scratch areas and IPC objects emptied, sockets and connections counted
    clock      the program's own time (OwnTime) and the container's CPU time since a mark
    program    the program's process: identity, limits, streams, guard, `exec`, its report
    helpers    the decoy and the killer
    warden     the warden (every program's parent and reaper) and the executor's handle on it
    places     the container (InContainer) or, unsafely, this machine (OnThisMachine)
    run        one program from its start to its verdict (Run)
    main       the entry point: set up, then serve requests
"""

# `world` first, before any module that imports `subprocess` or `threading`: it records their fork
# handlers instead of registering them in the executor (see world.py).
from . import world  # isort: skip
from .places import PROGRAM_UID_BASE
from .protocol import CAUSE_OF_ERROR, Answer, Cause, Request
from .world import REFERENCE_WORKER_MODULES

__all__ = [
    "CAUSE_OF_ERROR",
    "PROGRAM_UID_BASE",
    "REFERENCE_WORKER_MODULES",
    "Answer",
    "Cause",
    "Request",
    "world",
]
