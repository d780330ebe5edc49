"""Are two runs' logs the same, field by field? For checking that a change of the code changed no
log: run the same completions through two versions (`heval-inspect score`, `inspect eval`), then

    python benchmarks/log_equality.py BEFORE_DIR AFTER_DIR [--allow PATH ...]

Logs are paired by their folder under BEFORE_DIR/AFTER_DIR, task and shard, and every field of the
two is compared (header, results, every sample with its messages, events and scores). A field
that differs is printed once per path (list indices as `[]`) with how often it differed and one
example. Some fields differ between any two runs, and are listed as such, not as differences:
ids drawn at random, times and timings, a measured CPU or wall time (and the seconds in a
verdict's explanation), the hashes of the package's own source, and where the package's compose
file lives. Everything else must be equal, or allowed by name (`--allow .eval.task_args.variant`,
the field's path as printed). Exits 1 if any other field differs, or the logs do not pair up.
"""

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

# Paths (list indices as []) whose values differ between any two runs of the same completions.
RUN_TO_RUN = [
    r"\.(uuid|timestamp|working_start|started_at|completed_at|total_time|working_time)$",
    r"^\.eval\.(created|eval_id|run_id|task_id)$",
    r"\.(parent_id|span_id)$",
    r"^(?!\.samples\[\]\.id$).*\.id$",  # message and event ids; a sample's id must be equal
    r"\.metadata\.(cpu_seconds|wall_seconds)$",
    r"\.source_sha256$|\.executor_sha256$",
    r"^\.eval\.sandbox\.config$",
]
NUMBER = re.compile(r"\d+(\.\d+)?")


def differences(a: Any, b: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, what differs) of every field of two dumped logs that is not equal."""
    if type(a) is not type(b):
        yield path, f"{a!r:.70} != {b!r:.70}"
    elif isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                yield f"{path}.{key}", f"only in {'after' if key not in a else 'before'}"
            else:
                yield from differences(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        if len(a) != len(b):
            yield path, f"{len(a)} items != {len(b)}"
        for x, y in zip(a, b, strict=False):
            yield from differences(x, y, f"{path}[]")
    elif a != b:
        if path.endswith(".explanation") and NUMBER.sub("#", a) == NUMBER.sub("#", b):
            yield path + " (its numbers)", f"{a!r:.70} != {b!r:.70}"
        else:
            yield path, f"{a!r:.70} != {b!r:.70}"


def run_to_run(path: str) -> bool:
    return path.endswith(" (its numbers)") or any(re.search(p, path) for p in RUN_TO_RUN)


def logs(folder: Path) -> dict[tuple[str, str, str], Path]:
    """Every log under a folder, by (its folder, its task, its shard)."""
    found = {}
    for path in sorted(folder.rglob("*.eval")) + sorted(folder.rglob("*.json")):
        header = read_eval_log(str(path), header_only=True).eval
        shard = str(header.task_args.get("shard"))
        key = (str(path.parent.relative_to(folder)), header.task, shard)
        if key in found:
            sys.exit(f"log_equality: two logs of {key} in {folder}")
        found[key] = path
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--allow", action="append", default=[], help="a field's path, as printed")
    args = parser.parse_args()
    before, after = logs(args.before), logs(args.after)
    unpaired = sorted(set(before) ^ set(after))
    for key in unpaired:
        print(f"only in {'before' if key in before else 'after'}: {key}")
    unexpected = 0
    for key in sorted(set(before) & set(after)):
        a, b = read_eval_log(str(before[key])), read_eval_log(str(after[key]))
        counts: Counter[str] = Counter()
        example: dict[str, str] = {}
        for path, what in differences(a.model_dump(mode="json"), b.model_dump(mode="json")):
            counts[path] += 1
            example.setdefault(path, what)
        others = [p for p in counts if not run_to_run(p) and p not in args.allow]
        unexpected += len(others)
        print(
            f"{'/'.join(key)}: {len(a.samples or [])} samples against {len(b.samples or [])}; "
            f"{len(counts)} fields differ, {len(others)} of them unexpected"
        )
        for path in sorted(counts):
            kind = "ALLOWED" if path in args.allow else "run" if run_to_run(path) else "DIFFERS"
            print(f"  {kind:7} {counts[path]:6d}  {path}: {example[path]}")
    print(f"{len(unpaired)} unpaired logs, {unexpected} fields that differ and should not")
    return 1 if unpaired or unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
