"""Every task of every file, as each variant, in the sandbox: the canonical gap must pass and the
wrong ones must fail as they do in the original (docs/variants.md, *In the sandbox*).

For each official file (HumanEval and the four infilling subsets) and each variant (original,
renamed, reformatted), a completion file answers every task four times: the variant's canonical
gap, nothing, `pass` where the code goes, and the gap of another problem's task (the first task
of the next problem in the file, as the same variant). Each is scored as a user scores completions,
`heval-inspect score FILE --task TASK -T variant=NAME`, in the pool sandbox. Prints a table of
what passed and what each variant changed (identifiers renamed, tokens changed), then every
verdict of a variant that differs from the original's; exits 1 if a canonical gap failed, or a
variant's gap is empty where the original's is not, or an empty or `pass` gap's verdict differs
from the original's, or another problem's gap passed in a variant where it failed in the
original. Two kinds of difference are expected, and listed as such: another problem's gap may
fail in a variant where it passed in the original (a name both problems define, such as a
parameter `numbers`, works in the original and is renamed apart in the variant); and where a
random-span gap starts or ends inside a name, an empty or `pass` gap joins pieces of names whose
spelling the variant changed (`p` + `lanet2` is the original's `planet2`, a defined name; the
renamed pieces make a name nothing defines), so its verdict may go either way.

    python benchmarks/variant_sweep.py                     # all five files: about 106,000 programs
    python benchmarks/variant_sweep.py --files humaneval,random_span_light

Needs the package and a running Docker engine; the data from HEVAL_DATA_DIR, else the package's
download.
"""

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from inspect_ai.log import read_eval_log_sample_summaries

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.schema import SCORER, verdict_of
from heval_inspect.score import score_completions
from heval_inspect.tasks import problem_id
from heval_inspect.variants import VARIANTS, make_variant

TASKS = {
    "humaneval": ("humaneval", HUMANEVAL),
    "single_line": ("humaneval_single_line_infilling", SUBSETS["single_line"]),
    "multi_line": ("humaneval_multi_line_infilling", SUBSETS["multi_line"]),
    "random_span": ("humaneval_random_span_infilling", SUBSETS["random_span"]),
    "random_span_light": ("humaneval_random_span_infilling_light", SUBSETS["random_span_light"]),
}
CONTROLS = ("canonical", "empty", "pass", "other task")


def answers(record: dict, other: dict) -> dict[str, str]:
    """The four gaps given for a task (CONTROLS), from the task and another problem's task."""
    middle = record["canonical_solution"]
    indent = middle[: len(middle) - len(middle.lstrip(" \t"))]
    return {
        "canonical": middle,
        "empty": "",
        "pass": indent + "pass" + ("\n" if middle.endswith("\n") else ""),
        "other task": other["canonical_solution"],
    }


def others(records: list[dict]) -> dict[str, dict]:
    """For each task, the first task of the next problem in the file."""
    first: dict[str, dict] = {}
    for record in records:
        first.setdefault(problem_id(record["task_id"]), record)
    problems = list(first)
    after = {p: first[problems[(i + 1) % len(problems)]] for i, p in enumerate(problems)}
    return {r["task_id"]: after[problem_id(r["task_id"])] for r in records}


def cuts_a_name(record: dict) -> bool:
    """Whether the task's gap starts or ends inside a word: a name cut in two."""
    prompt, middle = record["prompt"], record["canonical_solution"]
    whole = prompt + middle + record.get("suffix", "")

    def inside(offset: int) -> bool:
        pair = whole[offset - 1 : offset + 1]
        return 0 < offset < len(whole) and all(c.isalnum() or c == "_" for c in pair)

    return inside(len(prompt)) or inside(len(prompt) + len(middle))


def passed_of(logs: list[str]) -> Iterator[tuple[str, int, bool]]:
    """(task id, epoch, passed) of every sample of some logs, from Inspect's summaries of the
    samples, as the report reads them (reading each sample whole reads the log's whole index
    again for each sample: time that grows with the square of the log's samples)."""
    for log in logs:
        for sample in read_eval_log_sample_summaries(log):
            verdict = verdict_of(sample.scores[SCORER].metadata if sample.scores else None)
            yield str(sample.id), sample.epoch, verdict == "passed"


def sweep(name: str, work: Path) -> tuple[list[dict], list[tuple]]:
    """The table's rows of one file, and its variants' verdicts that differ from the original's."""
    task, file = TASKS[name]
    records = load_official(file)
    other_of = others(records)
    rows, passed = [], {}
    for variant in VARIANTS:
        built = {r["task_id"]: make_variant(r, variant) for r in records}
        lines = []
        for task_id, each in built.items():
            other = make_variant(other_of[task_id], variant).record
            for middle in answers(each.record, other).values():
                lines.append(json.dumps({"task_id": task_id, "completion": middle}) + "\n")
        completions = work / f"{name}-{variant}.jsonl"
        completions.write_text("".join(lines))
        started = time.monotonic()
        logs = score_completions(str(completions), task, {"variant": variant},
                                 str(work / f"logs-{name}-{variant}"), progress=True)  # fmt: skip
        seconds = time.monotonic() - started
        # A gap with text that the variant left empty: nothing would be the right answer.
        emptied = sum(
            bool(r["canonical_solution"]) and not built[r["task_id"]].record["canonical_solution"]
            for r in records
        )
        # The epochs of a task are its completions in the file's order (CONTROLS).
        passed[variant] = {
            (task_id, CONTROLS[epoch - 1]): ok for task_id, epoch, ok in passed_of(logs)
        }
        rows.append(
            {
                "file": name,
                "variant": variant,
                "tasks": len(records),
                **{
                    f"{control} passed": sum(
                        ok for (_, each), ok in passed[variant].items() if each == control
                    )
                    for control in CONTROLS
                },
                "emptied gaps": emptied,
                "identifiers": sum(b.identifiers for b in built.values()),
                "tokens": sum(b.tokens for b in built.values()),
                "seconds": round(seconds),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    cut = {r["task_id"] for r in records if cuts_a_name(r)}
    differ = [
        Difference(name, variant, task_id, control, ok, expected(control, ok, task_id in cut))
        for variant in VARIANTS[1:]
        for (task_id, control), ok in passed[variant].items()
        if ok != passed["original"][(task_id, control)]
    ]
    return rows, differ


class Difference(NamedTuple):
    file: str
    variant: str
    task_id: str
    control: str
    passed: bool  # in the variant; the original's verdict is the other
    why: str | None  # why the difference is expected (the module's docstring), or None


def expected(control: str, passed: bool, gap_cuts_a_name: bool) -> str | None:
    if control == "other task" and not passed:
        return "a name both problems define, renamed apart"
    if control in ("empty", "pass") and gap_cuts_a_name:
        return "the gap cuts a name: the pieces joined are spelled anew"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--files", default=",".join(TASKS), help="comma-separated: " + ", ".join(TASKS)
    )
    files = parser.parse_args().files.split(",")
    work = Path(tempfile.mkdtemp(prefix="heval-variant-sweep-"))
    rows, differ = [], []
    for name in files:
        more_rows, more_differ = sweep(name, work)
        rows += more_rows
        differ += more_differ
    print("\n| file | variant | tasks | " + " | ".join(f"{c} passed" for c in CONTROLS)
          + " | identifiers | tokens |")  # fmt: skip
    print("| --- " * (5 + len(CONTROLS)) + "|")
    for row in rows:
        cells = [row["file"], row["variant"], f"{row['tasks']:,}",
                 *(f"{row[f'{c} passed']:,}" for c in CONTROLS),
                 f"{row['identifiers']:,}", f"{row['tokens']:,}"]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    print(f"\nverdicts that differ from the original's: {len(differ)}")
    for d in differ:
        print(f"  {d.file} {d.variant} {d.task_id} {d.control}: "
              f"{'passed' if d.passed else 'failed'} (original: "
              f"{'failed' if d.passed else 'passed'}): {d.why or 'NOT EXPECTED'}")  # fmt: skip
    wrong: list = [row for row in rows if row["canonical passed"] != row["tasks"]]
    wrong += [row for row in rows if row["emptied gaps"]]
    wrong += [d for d in differ if d.why is None]
    print(
        f"not as they must be: {len(wrong)} (rows with a canonical gap failed or emptied, and "
        f"differences not expected)"
    )
    print(f"work folder: {work}")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
