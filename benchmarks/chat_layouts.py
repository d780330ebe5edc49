"""Chat answers laid out as chat models lay them out, right and wrong: pass@1 per layout and file.

The perfect model (`heval_inspect.testing.chat_layouts`) answers tasks of HumanEval and of every
infilling subset in each layout (its own imports and helpers before the function, other parameter
names, two-space or tab indentation, recalled problems' blocks first, example usage after, all at
once), with the canonical code (right) or with code that fails (wrong). Every answer goes through
Inspect's `openai` provider, the package's solver, extraction and scorer, and the `pool` sandbox:
right answers should all pass (1.000), wrong ones all fail (0.000).

    python benchmarks/chat_layouts.py                   # 40 HumanEval problems, 10 tasks a subset
    python benchmarks/chat_layouts.py --humaneval 164 --subset 100

To measure another checkout's extraction, put its `src` first on PYTHONPATH and this checkout's
`src` after it (the layouts live in this one's `heval_inspect.testing`).

Needs a running Docker engine; the data from HEVAL_DATA_DIR, else the package's download.
"""

import argparse
import os
import sys
import tempfile
from collections import defaultdict

from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.schema import PASSED
from heval_inspect.testing.chat_layouts import LAYOUTS, corpus, layout_tasks
from heval_inspect.testing.perfect_model import PerfectModelServer

FILES = {"humaneval": HUMANEVAL, **SUBSETS}
PREFIXES = {
    "HumanEval": "humaneval",
    "SingleLineInfilling": "single_line",
    "MultiLineInfilling": "multi_line",
    "RandomSpanInfilling": "random_span",
    "RandomSpanInfillingLight": "random_span_light",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--humaneval", type=int, default=40, help="HumanEval problems a layout")
    parser.add_argument("--subset", type=int, default=10, help="tasks of each subset a layout")
    args = parser.parse_args()
    per_file = dict.fromkeys(SUBSETS, args.subset) | {"humaneval": args.humaneval}
    chosen = corpus({name: load_official(file) for name, file in FILES.items()}, per_file)
    every = {record["task_id"]: record for records in chosen.values() for record in records}
    # The logs are read before their folder goes (Inspect reads their samples lazily).
    with PerfectModelServer(list(every.values()), tuple(LAYOUTS)) as server:
        os.environ["OPENAI_BASE_URL"] = f"{server.url}/v1"
        os.environ["OPENAI_API_KEY"] = "perfect"
        with tempfile.TemporaryDirectory() as log_dir:
            logs = inspect_eval(layout_tasks(chosen), log_dir=log_dir, display="none", max_tasks=4)
            return report(logs)


def report(logs: list) -> int:
    """Print the table; 0 if every answer got its verdict."""
    # (layout, kind) -> file -> [passed, samples]
    cells: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0])
    )
    for log in logs:
        if log.status != "success":
            print(f"{log.eval.model}: {log.status}", file=sys.stderr)
            return 1
        layout, kind = log.eval.model.split("/", 1)[1].rsplit(".", 1)
        for sample in log.samples or []:
            score = next(iter((sample.scores or {}).values()))
            cell = cells[layout, kind][PREFIXES[str(sample.id).split("/")[0]]]
            cell[0] += int(score.value[PASSED])  # type: ignore[index]
            cell[1] += 1
    columns = list(FILES)
    print(f"{'layout':28}{'kind':7}" + "".join(f"{name:>19}" for name in columns))
    print(f"{'':35}" + "".join(f"{'passed / answers':>19}" for _ in columns))
    for (layout, kind), files in cells.items():
        row = [f"{files[c][0]} / {files[c][1]}" if files[c][1] else "-" for c in columns]
        print(f"{layout:28}{kind:7}" + "".join(f"{cell:>19}" for cell in row))
    wrong = sum(
        files[c][0] if kind == "wrong" else files[c][1] - files[c][0]
        for (_, kind), files in cells.items()
        for c in columns
    )
    total = sum(files[c][1] for files in cells.values() for c in columns)
    print(f"\n{total - wrong} of {total} answers got the verdict their code deserves")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
