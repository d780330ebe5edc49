"""The schema every module reads: the executor's causes are its causes, and what is written is
read back the same."""

import json
import typing

import pytest

from heval_inspect.provenance import eval_metadata
from heval_inspect.sandbox import executor
from heval_inspect.schema import (
    RUN_KEY,
    Cause,
    DataFile,
    EvalMetadata,
    Execution,
    SampleMetadata,
    ShardRecord,
    cause_of,
    executor_lost,
    verdict_of,
)


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


def test_the_executors_answer_is_an_execution_field_for_field():
    # mypy holds the keys to the fields (Execution.from_answer); this holds their types too: the
    # cause, a str of Cause's values in the answer, is a Cause in the Execution.
    answer = typing.get_type_hints(executor.Answer)
    fields = typing.get_type_hints(Execution)
    assert answer | {"cause": Cause} == {name: fields[name] for name in answer}
    assert set(fields) - set(answer) == {"containers_replaced"}  # the pool's, not the executor's
    assert set(ANSWER) == set(answer)


def test_a_lost_executor_is_the_reference_timed_out():
    lost = executor_lost()
    assert (lost.verdict, lost.cause) == ("timed out", Cause.EXECUTOR_LOST)


def test_a_shard_record_reads_back_as_written():
    record = ShardRecord(2, 4, tasks=3, problems=["HumanEval/1"], all_tasks=12, all_problems=4)
    assert ShardRecord.from_metadata(json.loads(json.dumps(record.metadata()))) == record
    assert record.metadata()["numbering"] == "1-based"
    assert ShardRecord.from_metadata(None) is None


def test_a_sample_metadata_reads_back_as_written_and_another_datasets_as_its_own():
    written = SampleMetadata("multi_line", "HumanEval/3", "file.jsonl.gz@0123456789ab")
    assert list(written.metadata()) == ["subset", "problem_id", "source"]  # as logs hold them
    assert SampleMetadata.read(json.loads(json.dumps(written.metadata())), "x") == written
    assert SampleMetadata.read({"prompt": "..."}, "mine/7") == SampleMetadata("all", "mine/7", "")
    assert SampleMetadata.read(None, 3) == SampleMetadata("all", "3", "")


def test_eval_metadata_reads_back_as_written_and_an_older_logs_as_empty():
    files = [DataFile("problems", "/data/p.jsonl", "ab" * 32), DataFile("completions", "/s", "cd")]
    written = eval_metadata("2-B", files, "local", 3.0, 512, None)
    record = ShardRecord(1, 2, tasks=3, problems=["HumanEval/1"], all_tasks=6, all_problems=2)
    given = {"label": "mine", RUN_KEY: "0123"}  # --metadata, added by the run's command
    logged = json.loads(json.dumps(written | {"shard": record.metadata()} | given))
    metadata = EvalMetadata.read(logged)
    assert metadata.task_metadata() == written
    assert (metadata.full_task_version, metadata.task_comparability_version) == ("2-B", 2)
    assert metadata.provenance.problem_files == files[:1]
    assert metadata.provenance.completion_files == files[1:]
    assert (metadata.provenance.timeout_seconds, metadata.provenance.memory_bytes) == (
        3.0,
        512 << 20,
    )
    assert (metadata.shard, metadata.label, metadata.run_key) == (record, "mine", "0123")
    older = EvalMetadata.read(None)
    assert older.provenance.data_files == [] and older.provenance.timeout_seconds is None
    assert older.shard is None and older.full_task_version is None


def test_a_verdict_is_read_from_a_scores_metadata():
    assert verdict_of(Execution.from_answer(ANSWER).score_metadata()) == "failed: "
    assert verdict_of({}) is None and verdict_of(None) is None
