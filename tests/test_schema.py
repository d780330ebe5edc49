"""The schema every module reads: the executor's causes are its causes, and what is written is
read back the same."""

import json

import pytest

from heval_inspect.sandbox import executor
from heval_inspect.schema import Cause, Execution, ShardRecord, cause_of, executor_lost


def test_the_executor_spells_out_the_schema_causes():
    # The executor is shipped into the container as source and imports nothing of ours.
    spelled = {name: value for name, value in vars(executor.Cause).items() if name.isupper()}
    assert spelled == {cause.name: cause.value for cause in Cause}
    assert set(executor.CAUSE_OF_ERROR.values()) <= {cause.value for cause in Cause}


ANSWER = {
    "status": "failed",
    "cause": "wrong answer",
    "reason": "",
    "error": "AssertionError",
    "returncode": 1,
    "cpu_seconds": 0.01,
    "wall_seconds": 0.02,
    "stdout_bytes": 0,
    "stderr_tail": "Traceback ...\nAssertionError\n",
    "residue": {},
}


def test_an_answer_is_read_by_value_and_its_metadata_gives_the_cause_back():
    execution = Execution.from_answer(json.loads(json.dumps(ANSWER)))
    assert execution.cause is Cause.WRONG_ANSWER and execution.verdict == "failed: "
    metadata = json.loads(json.dumps(execution.score_metadata()))
    assert cause_of(metadata) is Cause.WRONG_ANSWER
    assert metadata["verdict"] == "failed: " and "residue" not in metadata
    assert cause_of({"verdict": "failed: "}) is None  # scored without a cause
    assert cause_of({"cause": "something else"}) is None


def test_an_answer_with_another_cause_or_field_is_not_a_verdict():
    with pytest.raises(ValueError):
        Execution.from_answer(ANSWER | {"cause": "it passed, honestly"})
    with pytest.raises(TypeError):
        Execution.from_answer(ANSWER | {"passed": True})


def test_a_lost_executor_is_the_reference_timed_out():
    lost = executor_lost()
    assert (lost.verdict, lost.cause) == ("timed out", Cause.EXECUTOR_LOST)


def test_a_shard_record_reads_back_as_written():
    record = ShardRecord(2, 4, tasks=3, problems=["HumanEval/1"], all_tasks=12, all_problems=4)
    assert ShardRecord.from_metadata(json.loads(json.dumps(record.metadata()))) == record
    assert record.metadata()["numbering"] == "1-based"
    assert ShardRecord.from_metadata(None) is None
