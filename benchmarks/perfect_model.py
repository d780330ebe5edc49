"""A perfect model on the whole benchmark: pass@1 per subset, per chat style and per FIM family.

The perfect model (`heval_inspect.testing.perfect_model`) answers every task with its canonical
span, over HTTP on 127.0.0.1, in each chat style (through Inspect's `openai` provider, chat
completions API) and in each FIM family's raw form (through `openai-api-completions`). Every answer
goes through the package's solver, extraction and scorer and runs in the default `pool` sandbox, so
anything below 1.000 is lost by the plumbing, not by the model. Exact match is printed too: below
1.000 only for the styles whose answers cannot show whether the middle ends its line (`natural_*`).

    python benchmarks/perfect_model.py               # all 8,652 + 164 tasks: hours on 2 cores
    python benchmarks/perfect_model.py --limit 5     # the first 5 tasks of each subset
    python benchmarks/perfect_model.py --styles bare_fence --fim starcoder,codestral

Needs a running Docker engine; the data from HEVAL_DATA_DIR, else the package's download.
"""

import argparse
import os
import sys
import tempfile

from inspect_ai import eval as inspect_eval
from inspect_ai import task_with
from inspect_ai.model import get_model

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.prompts import FIM_FORMATS
from heval_inspect.tasks import humaneval, humaneval_infilling
from heval_inspect.testing.answers import CHAT_STYLES
from heval_inspect.testing.perfect_model import PerfectModelServer

COLUMNS = [*SUBSETS, "humaneval"]


def tasks(fim_format: str | None) -> list:
    """One task per infilling subset and HumanEval, so that --limit applies to each."""
    subset_tasks = [humaneval_infilling(subsets=name, fim_format=fim_format) for name in SUBSETS]
    return [*subset_tasks, humaneval(fim_format=fim_format)]


def column(log) -> str:
    return log.eval.task_args.get("subsets") or "humaneval"


def table(rows: dict[str, dict[str, tuple[float, float]]]) -> str:
    header = f"{'style or family':32}" + "".join(f"{name:>19}" for name in COLUMNS)
    lines = [header, f"{'':32}" + "".join(f"{'pass@1 / exact':>19}" for _ in COLUMNS)]
    for name, cells in rows.items():
        values = [cells.get(c) for c in COLUMNS]
        lines.append(
            f"{name:32}"
            + "".join(f"{'-':>19}" if v is None else f"{v[0]:>11.3f} / {v[1]:.3f}" for v in values)
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, help="tasks per subset (default: all)")
    parser.add_argument("--styles", default=",".join(CHAT_STYLES), help="chat styles, or ''")
    parser.add_argument("--fim", default=",".join(FIM_FORMATS), help="FIM families, or ''")
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()
    styles = [s for s in args.styles.split(",") if s]
    families = [f for f in args.fim.split(",") if f]
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="heval-perfect-")

    records = [r for file in [*SUBSETS.values(), HUMANEVAL] for r in load_official(file)]
    rows: dict[str, dict[str, tuple[float, float]]] = {}
    with PerfectModelServer(records) as server:
        os.environ.update(
            OPENAI_BASE_URL=f"{server.url}/v1",
            OPENAI_API_KEY="perfect",
            PERFECT_BASE_URL=f"{server.url}/v1",
            PERFECT_API_KEY="perfect",
        )
        logs = []
        if styles:
            models = [get_model(f"openai/{style}", responses_api=False) for style in styles]
            logs += inspect_eval(
                tasks(None), model=models, limit=args.limit, log_dir=log_dir, max_tasks=4
            )
        if families:
            fim_tasks = [
                task_with(task, model=f"openai-api-completions/perfect/{family}")
                for family in families
                for task in tasks(family)
            ]
            logs += inspect_eval(fim_tasks, limit=args.limit, log_dir=log_dir, max_tasks=4)
    for log in logs:
        if log.status != "success":
            sys.exit(f"{log.eval.task} with {log.eval.model} failed: {log.error}")
        family = log.eval.task_args.get("fim_format")
        name = f"fim: {family}" if family else f"chat: {log.eval.model.split('/', 1)[1]}"
        metrics = log.results.scores[0].metrics
        rows.setdefault(name, {})[column(log)] = (
            metrics["pass@1"].value,
            metrics["exact_match"].value,
        )
    print("\n" + table(rows))
    print(f"logs in {log_dir}")


if __name__ == "__main__":
    main()
