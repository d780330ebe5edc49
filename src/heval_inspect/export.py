"""From a finished log back to the reference harness's results file.

The reference (`evaluate_functional_correctness`) writes `<samples>_results.jsonl`: each input row,
in input order, plus `passed` and `result` ("passed", "failed: ..." or "timed out").

- From the completion file (the one named, else the one the log replayed, if it is there): each
  of its rows as it is, the n-th row of a task being epoch n of that task's sample in the log.
- From the log alone (a model's run, or a replayed file that is gone): one row per sample of the
  log, in the task's order and then by epoch (the order of a file the reference's README makes),
  of `task_id` and `completion`, the code that went into the gap, as the scorer ran it.
"""

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from .data import count_completions, problem_for
from .errors import DataError
from .extract import middle_from_chat
from .schema import MIDDLE, SCORER, completion_file_of, verdict_of


def export_results(log_file: str, samples: str | None = None, out: str | None = None) -> Path:
    """Write the reference's results file for a log; returns its path."""
    log = _read_log(log_file)
    verdicts = {(str(sample.id), sample.epoch): _verdict(sample) for sample in log.samples or []}
    if not any(verdict != "not scored" for verdict in verdicts.values()):
        raise DataError(
            f"{log_file} has no sample scored by heval_inspect's unit tests: give the log of a "
            f"heval_inspect task that ran to its scoring."
        )
    replayed = completion_file_of(log)
    samples = samples or (replayed if replayed and Path(replayed).is_file() else None)
    if samples:
        count_completions(samples)  # a missing or malformed file: one line saying which
        rows = _file_rows(samples, verdicts)
        default = Path(f"{samples}_results.jsonl")
    else:
        rows = _log_rows(log, verdicts)
        log_path = Path(log_file)
        default = log_path.with_name(f"{log_path.stem}_results.jsonl")
    out_path = Path(out) if out else default
    partial = out_path.with_name(out_path.name + ".part")
    try:
        with open(partial, "w", encoding="utf-8") as results:
            results.writelines(json.dumps(row) + "\n" for row in rows)
        partial.replace(out_path)
    except OSError as error:
        raise DataError(f"Cannot write {out_path}: {error.strerror or error}.") from error
    return out_path


def _read_log(log_file: str) -> EvalLog:
    try:
        return read_eval_log(log_file)
    except (OSError, ValueError) as error:  # missing, a folder, not a log ("No recorder ...")
        raise DataError(
            f"Cannot read the log {log_file} ({error}): give the .eval (or .json) file of a run."
        ) from error


def _verdict(sample: EvalSample) -> str:
    score = (sample.scores or {}).get(SCORER)
    verdict = verdict_of(score.metadata) if score is not None else None
    if verdict is not None:
        return verdict
    if sample.error is not None:
        return f"error: {sample.error.message}"
    return "not scored"


def _row(row: dict, result: str) -> dict:
    return row | {"result": result, "passed": result == "passed"}


def _file_rows(samples: str, verdicts: dict[tuple[str, int], str]) -> Iterator[dict]:
    seen: Counter[str] = Counter()
    with open(samples, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            seen[row["task_id"]] += 1
            yield _row(row, verdicts.get((str(row["task_id"]), seen[row["task_id"]]), "not scored"))


def _log_rows(log: EvalLog, verdicts: dict[tuple[str, int], str]) -> Iterator[dict]:
    order = {str(each): n for n, each in enumerate(log.eval.dataset.sample_ids or [])}
    for sample in sorted(
        log.samples or [], key=lambda sample: (order.get(str(sample.id), len(order)), sample.epoch)
    ):
        task_id = str(sample.id)
        row = {"task_id": task_id, "completion": _completion(sample)}
        yield _row(row, verdicts[(task_id, sample.epoch)])


def _completion(sample: EvalSample) -> str:
    """The code that went into the gap: what this package's solvers leave in the store, else
    what the scorer takes from the model's chat answer (scorer.unit_tests)."""
    middle = (sample.store or {}).get(MIDDLE)
    if middle is not None:
        return middle
    if sample.output.completion:
        problem = problem_for(str(sample.id), sample.metadata or {})
        return middle_from_chat(sample.output.completion, problem["prompt"], problem["suffix"])
    return ""  # no answer: the sample ended in an error before the model answered
