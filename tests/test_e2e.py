"""End to end with a scripted chat model: the chat prompt, the model's reply, the extraction of
its code, the program run in the real sandbox, the verdicts and the headline figure."""

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from heval_inspect import humaneval
from heval_inspect.data import HUMANEVAL, load_official

pytestmark = pytest.mark.docker


def test_a_chat_models_replies_are_extracted_run_and_judged(tmp_path):
    first, second = load_official(HUMANEVAL)[:2]
    replies = [
        # As chat models answer: words around a fenced block holding the function's body.
        f"Here is the body:\n\n```python\n{first['canonical_solution']}```\n\nIt compares pairs.",
        "```python\n    return []\n```",
    ]
    outputs = [ModelOutput.from_content("mockllm/model", reply) for reply in replies]
    for output in outputs:
        # Given, so that the mock does not count tokens with a tokenizer it would download.
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    model = get_model("mockllm/model", custom_outputs=outputs)
    # One sample at a time, so that the scripted replies meet the problems in dataset order.
    [log] = inspect_eval(
        humaneval(), model=model, limit=2, max_samples=1, log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success", log.error
    verdicts = {
        sample.id: sample.scores["unit_tests"].metadata["verdict"] for sample in log.samples
    }
    assert verdicts == {first["task_id"]: "passed", second["task_id"]: "failed: "}
    metrics = log.results.scores[0].metrics
    assert metrics["pass@1"].value == 0.5 and log.results.completed_samples == 2
    assert "samples" not in metrics and "pass@1_stderr" not in metrics  # each figure once
    assert log.eval.dataset.name == "HumanEval"
