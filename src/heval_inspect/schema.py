"""The names a log of ours is read by, in one place for every module that reads or writes it."""

SCORER = "unit_tests"  # the scorer's name: its scores are `sample.scores[SCORER]`
TASK_PREFIX = "heval_inspect/"  # a log's task registry name starts with it when the task is ours


def is_ours(task_registry_name: str | None) -> bool:
    """Whether a log (by its task's registry name) is of one of this package's tasks."""
    return (task_registry_name or "").startswith(TASK_PREFIX)


def completion_file_of(log) -> str | None:
    """The completion file a log replayed: the task's `samples` or the replay solver's."""
    if log.eval.task_args.get("samples"):
        return log.eval.task_args["samples"]
    for step in log.plan.steps:
        if step.solver.endswith("replay") and "samples" in step.params:
            return step.params["samples"]
    return None
