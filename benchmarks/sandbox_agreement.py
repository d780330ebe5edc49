"""Verdicts of the pool sandbox against Inspect's standard docker sandbox, on the same programs.

A mixed sample of 600 programs: 60 multi-line, 30 single-line and 30 random-span tasks (fixed
seed), each with the five completions of the throughput benchmark (canonical, empty, `pass`, an
infinite loop, `return None`). Both runs go through `inspect eval ... -T samples=FILE`, one with
`-T sandbox=pool`, one with `-T sandbox=docker` (a compose project per sample: the long one, about
ten minutes here). Prints the verdict counts of each and every program whose verdict differs.

    python benchmarks/sandbox_agreement.py

Needs the package and a running Docker engine; the data from HEVAL_DATA_DIR, else the package's
download.
"""

import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from throughput import ROOT, SEED, five_variants, problems

TASKS = {"multi_line": 60, "single_line": 30, "random_span": 30}


def main() -> None:
    from heval_inspect.export import export_results

    rows = []
    for subset, count in TASKS.items():
        records = sorted(problems([subset]), key=lambda r: r["task_id"])
        for record in random.Random(SEED).sample(records, count):
            rows += five_variants(record)
    work = Path(tempfile.mkdtemp(prefix="heval-agreement-"))
    samples = work / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{len(rows)} programs from {sum(TASKS.values())} tasks ({TASKS})")

    results = {}
    for sandbox in ("pool", "docker"):
        log_dir = work / sandbox
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", "heval_inspect/humaneval_infilling",
             "--model", "none", "--display", "none", "--log-dir", str(log_dir),
             "-T", f"subsets={','.join(TASKS)}", "-T", f"samples={samples}",
             "-T", "partial=true", "-T", f"sandbox={sandbox}"],
            cwd=ROOT,
            check=True,
        )  # fmt: skip
        [log] = log_dir.glob("*.eval")
        exported = export_results(str(log), str(samples), str(work / f"{sandbox}.jsonl"))
        results[sandbox] = [json.loads(line)["result"] for line in exported.open()]
        print(f"{sandbox}: {time.monotonic() - started:.0f} s, verdicts "
              f"{dict(Counter(r.split(':')[0] for r in results[sandbox]))}")  # fmt: skip

    differ = [
        (index, pool, docker)
        for index, (pool, docker) in enumerate(zip(results["pool"], results["docker"], strict=True))
        if pool != docker
    ]
    print(f"same result text: {len(rows) - len(differ)} of {len(rows)}")
    for index, pool, docker in differ:
        print(f"  row {index} {rows[index]['task_id']}: pool {pool!r}, docker {docker!r}")
    print(f"files kept in {work}")


if __name__ == "__main__":
    main()
