"""Solvers for endpoints that take the prefix and the suffix as two fields (fim_endpoints.py).

`infill_suffix` sends the sample's prefix and suffix, unchanged, as a typed FimRequest in the user
message's metadata, where the provider reads them; the message's text shows the code with the gap
marked, for the log. Why metadata rather than a task argument or a prompt to parse: the provider
needs the two texts exactly (a prompt would have to be split again, and any marker could occur in
the code), and the solver, not the user, knows which provider it talks to.

`infill`, the tasks' default solver, asks such a provider that way and any other model in words
(`infill_chat`): `inspect eval ... --model mistral-fim/codestral-latest` needs no other argument.
"""

from inspect_ai.model import get_model
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from .data import problem_for
from .extract import middle_from_fim
from .fim_endpoints import FimRequest, SuffixFimAPI
from .prompts import FIM_FORMATS
from .schema import MIDDLE
from .solvers import infill_chat

# What ends a middle whatever the model's family: every family's end and FIM tokens (a server
# that does not treat them as special returns them as text, with whatever the model wrote after).
FIM_END_TOKENS = tuple(
    dict.fromkeys(stop for family in FIM_FORMATS.values() for stop in family.stop)
)


@solver
def infill_suffix() -> Solver:
    """Send the code before and after the gap as the endpoint's two fields (the `mistral-fim`,
    `openai-fim`, `ollama-fim` and `llama-cpp-fim` providers), and keep the answer up to the
    first FIM end token, as the raw FIM path keeps a completion up to its family's stop token."""
    ask = generate()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        problem = problem_for(str(state.sample_id), state.metadata)
        request = FimRequest(prefix=problem["prompt"], suffix=problem["suffix"])
        state.messages = [request.as_message()]
        state = await ask(state, generate)
        state.store.set(MIDDLE, middle_from_fim(state.output.completion, FIM_END_TOKENS))
        return state

    return solve


@solver
def infill() -> Solver:
    """Ask the model the way its provider takes: a suffix-taking FIM endpoint the prefix and the
    suffix (infill_suffix), any other model the chat prompt (infill_chat)."""
    chat, suffix = infill_chat(), infill_suffix()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if isinstance(get_model().api, SuffixFimAPI):
            return await suffix(state, generate)
        return await chat(state, generate)

    return solve
