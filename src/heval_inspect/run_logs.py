"""The logs in a log folder of each run of a command, found by the run key each log records in
its eval metadata (`heval_run`): how `heval-inspect parallel` and `heval-inspect score`, run again,
find what an earlier run of the same command has written.
"""

from pathlib import Path

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from .schema import EvalMetadata


def logs_of_run(log_dir: str, key: str) -> list[tuple[str, EvalLog]]:
    """The logs in `log_dir` (not its subfolders) that record the run `key` (`heval_run`), each
    with its header."""
    return logs_by_run(log_dir).get(key, [])


def logs_by_run(log_dir: str) -> dict[str, list[tuple[str, EvalLog]]]:
    """The logs in `log_dir` (not its subfolders) that record a run (`heval_run`), each with its
    header, by run: one pass over the folder for a command that looks up many runs."""
    if "://" not in log_dir and not Path(log_dir).is_dir():
        return {}
    found: dict[str, list[tuple[str, EvalLog]]] = {}
    for info in list_eval_logs(log_dir, recursive=False):
        header = read_eval_log(info.name, header_only=True)
        if key := EvalMetadata.read(header.eval.metadata).run_key:
            found.setdefault(key, []).append((info.name, header))
    return found
