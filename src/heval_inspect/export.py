"""From a finished log back to the reference harness's results file.

The reference (`evaluate_functional_correctness`) writes `<samples>_results.jsonl`: each input row,
in input order, plus `passed` and `result` ("passed", "failed: ..." or "timed out"). The n-th row
of a task is epoch n of that task's sample in the log.
"""

import json
from collections import Counter
from pathlib import Path

from inspect_ai.log import read_eval_log

from .errors import DataError
from .schema import SCORER, completion_file_of


def export_results(log_file: str, samples: str | None = None, out: str | None = None) -> Path:
    """Write the reference's results file for a log; returns its path."""
    log = read_eval_log(log_file)
    samples = samples or completion_file_of(log)
    if samples is None:
        raise DataError(
            f"{log_file} did not replay a completion file; name the file the rows come from "
            f"with --samples FILE."
        )
    verdicts = {}
    for sample in log.samples or []:
        score = (sample.scores or {}).get(SCORER)
        if score is not None:
            verdicts[(str(sample.id), sample.epoch)] = score.metadata["verdict"]
        elif sample.error is not None:
            verdicts[(str(sample.id), sample.epoch)] = f"error: {sample.error.message}"
    out_path = Path(out) if out else Path(f"{samples}_results.jsonl")
    seen: Counter[str] = Counter()
    partial = out_path.with_name(out_path.name + ".part")
    with open(samples, encoding="utf-8") as rows, open(partial, "w", encoding="utf-8") as results:
        for line in rows:
            if not line.strip():
                continue
            row = json.loads(line)
            seen[row["task_id"]] += 1
            result = verdicts.get((str(row["task_id"]), seen[row["task_id"]]), "not scored")
            results.write(json.dumps(row | {"result": result, "passed": result == "passed"}) + "\n")
    partial.replace(out_path)
    return out_path
