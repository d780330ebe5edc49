"""Solvers: ask a chat or a FIM model for the gap, or answer without any model (reference)."""

from collections.abc import Iterator

from inspect_ai import Task
from inspect_ai.model import ChatMessageAssistant, ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from . import prompts
from .data import check_completions, problem_for
from .errors import NoModelError
from .extract import middle_from_chat, middle_from_fim
from .inspect_internals import Chain, PrerequisiteError
from .prompts import FimFormat
from .schema import MIDDLE

__all__ = ["MIDDLE"]  # re-exported: code that took it from here before schema.py held it
# The model name a replayed completion is recorded under.
REPLAYED = "replay"


@solver
def infill_chat() -> Solver:
    """Ask a chat model (the sample's input is the chat prompt) and extract the gap's code."""
    ask = generate()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state = await ask(state, generate)
        problem = problem_for(str(state.sample_id), state.metadata)
        middle = middle_from_chat(state.output.completion, problem["prompt"], problem["suffix"])
        state.store.set(MIDDLE, middle)
        return state

    return solve


@solver
def infill_fim(fim_format: FimFormat | str) -> Solver:
    """Send the raw FIM prompt (the sample's input) and take the completion up to a stop token.

    The tasks' `fim_format` argument builds that input and sets max_tokens and the family's stop
    sequences in the task's generate config (raw-completion providers default to 1 token).

    Args:
        fim_format: The model family: its name, a key of prompts.FIM_FORMATS (e.g. "starcoder"),
            or as the tasks give it, parsed (a FimFormat).
    """
    family = fim_format
    if not isinstance(family, FimFormat):  # by name (`-S fim_format=NAME`, a log's plan)
        family = prompts.fim_format(family)
    ask = generate()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state = await ask(state, generate)
        state.store.set(MIDDLE, middle_from_fim(state.output.completion, family.stop))
        return state

    return solve


class AsksTheModel(Chain):
    """A task's default solver, which asks the eval's model: with no model (--model none) the run
    stops before any sample, with one line saying what to give, instead of with a traceback in
    the first sample (Inspect's "No model specified").

    Inspect makes a task's plan by iterating its solver when no --solver replaces it, before any
    sample runs and outside its sample error handling (inspect_internals.py), so the check is
    made there: only when this solver is the one that will run. `inspect eval-set` iterates it
    with each task's model first (for the tasks' identifiers), then again for its display with
    no model active (`none`): a solver once iterated with a real model is not checked again.
    """

    def __init__(self, solver: Solver, name: str) -> None:
        super().__init__([solver])
        self.name = name
        # The task it is the solver of: Inspect resolves every task's plan with the eval's model
        # active, which is not the one asked when the task has a model of its own.
        self.task: Task | None = None
        self.asked_a_model = False

    def __iter__(self) -> Iterator[Solver]:
        if self.task is not None and self.task.model is not None:
            return super().__iter__()
        try:
            model = get_model()
        except PrerequisiteError:  # no model at all: Inspect says so itself
            model = None
        if model is not None and str(model) != "none/none":
            self.asked_a_model = True
        elif model is not None and not self.asked_a_model:
            raise NoModelError(
                f"--model none, but this task's solver ({self.name}) asks a model: add "
                f"--solver heval_inspect/reference (the canonical answers, no model), -T "
                f"samples=FILE (completions made elsewhere, see the README), or a real model "
                f"(e.g. --model openai/gpt-4o-mini)."
            )
        return super().__iter__()


@solver
def reference() -> Solver:
    """Answer with the canonical solution, calling no model: runs the whole pipeline for free.

    Every sample must pass with it; a failure means the sandbox or the program assembly is wrong.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        canonical = state.target.text
        state.output = ModelOutput.from_content(model="reference", content=canonical)
        state.messages.append(ChatMessageAssistant(content=canonical, model="reference"))
        state.store.set(MIDDLE, canonical)
        return state

    return solve


@solver
def replay(samples: str) -> Solver:
    """Answer from completions generated elsewhere, in the reference harness's format.

    Args:
        samples: A JSON lines file of {"task_id": ..., "completion": ...}. The n-th completion for a
            task is the answer of epoch n, so n completions per task with `--epochs n` give pass@k.
            (The task argument `-T samples=FILE` also sets the epochs and checks the file against
            the task's problems before anything runs.)
    """
    # A missing or malformed file stops the run before it starts. Its texts come from the one
    # read that checked it (data.check_completions): the task's own check, when it made this.
    completions = check_completions(samples).completions

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        answers = completions.get(str(state.sample_id))
        if not answers:
            raise ValueError(f"{samples} has no completion for task {state.sample_id}.")
        if state.epoch > len(answers):
            raise ValueError(
                f"{samples} has {len(answers)} completion(s) for task {state.sample_id}, but this "
                f"is epoch {state.epoch}: run with --epochs {len(answers)} or fewer."
            )
        completion = answers[state.epoch - 1]
        state.output, message = replayed(completion)
        state.messages.append(message)
        state.store.set(MIDDLE, completion)
        return state

    return solve


def replayed(completion: str) -> tuple[ModelOutput, ChatMessageAssistant]:
    """What a replayed completion is recorded as: the model's output and its message (also
    written so by `heval-inspect score`, score.py). Its code goes into the gap as is."""
    return (
        ModelOutput.from_content(model=REPLAYED, content=completion),
        ChatMessageAssistant(content=completion, model=REPLAYED),
    )
