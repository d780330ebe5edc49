"""The executor's entry point: the reference worker's world loaded, the place and the warden
started, then one request from stdin (one `docker exec` a program), or one a line (`serve`: a
pool's container) until EOF or residue.
"""

import gc
import json
import os
import signal
import sys

from .kernel import PR_SET_DUMPABLE, prctl
from .places import InContainer, OnThisMachine
from .program import warm_up
from .run import run
from .warden import Warden
from .world import load_the_reference_workers_modules, note_the_executors_own_modules


def main() -> None:
    arguments = sys.argv[1:]
    # Not dumpable, its /proc/<pid>/fd and mem are closed to every other process, even one of its
    # own user (the `local` case): a program cannot open the executor's stdout to write a verdict
    # line of its own, nor its stdin to send requests. Its forks (decoy, warden) inherit that.
    prctl(PR_SET_DUMPABLE, 0)
    if "local" not in arguments and not os.path.exists("/.dockerenv"):
        # It kills every process of the programs' user: outside a container, someone else's.
        sys.exit("The executor runs only inside the sandbox container (or with `local`).")
    # Before the helpers are forked (the decoy, the killer): each one made again later (after
    # the out-of-memory killer took it, or once used) is then a copy of the same process.
    load_the_reference_workers_modules()
    place: InContainer | OnThisMachine = OnThisMachine() if "local" in arguments else InContainer()
    note_the_executors_own_modules()
    warm_up()
    # The objects that exist now (the warm-up's garbage collected first) stay where they are:
    # the collector in the forked processes leaves them (and the pages they share with this one)
    # alone.
    gc.collect()
    gc.freeze()
    warden = Warden(place)
    place.settle()
    if "serve" in arguments:
        for line in sys.stdin:
            answer = run(json.loads(line), place, warden)
            print(json.dumps(answer), flush=True)
            if answer["residue"]:
                # The container is not as it was: no program runs here any more, not even one
                # whose request is already waiting (the pool sends the next one early). The pool
                # runs it elsewhere, and replaces this container.
                break
        if isinstance(place, InContainer):
            # Its stdin ends when the eval process is done with the container, or is gone
            # without cleaning up (SIGKILL, a requeued batch job): then nothing else will stop
            # it, so it stops itself. PID 1 is Docker's init, which passes SIGTERM on to the idle
            # main process and exits with it; the pool removes stopped pools (`remove_dead`).
            os.kill(1, signal.SIGTERM)
    else:
        print(json.dumps(run(json.loads(sys.stdin.read()), place, warden)), flush=True)
