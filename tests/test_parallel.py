"""`heval-inspect parallel`: shard processes with pools that share the cores, and reruns that skip
the shards already done (that one runs real shards in the sandbox)."""

import json
import os
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from heval_inspect.cli import main
from heval_inspect.parallel import (
    pool_sizes,
    run_key,
    shard_commands,
    shard_range,
    whole_run_selection,
)

INSPECT = str(Path(sys.executable).with_name("inspect"))


@pytest.mark.parametrize(
    "shards, cores, sizes",
    [(1, 2, [2]), (2, 2, [1, 1]), (3, 8, [3, 3, 2]), (4, 64, [16] * 4), (3, 2, [1, 1, 1])],
)
def test_pools_share_the_cores(shards, cores, sizes):
    assert pool_sizes(shards, cores) == sizes


def test_each_shard_command_names_its_shard():
    assert shard_commands(["inspect", "eval", "t"], 2) == [
        ["inspect", "eval", "t", "-T", "shard=1/2"],
        ["inspect", "eval", "t", "-T", "shard=2/2"],
    ]
    with pytest.raises(ValueError, match="already names a shard"):
        shard_commands(["inspect", "eval", "t", "-T", "shard=1/2"], 2)


RECORDER = (
    "import json, os, sys; "
    "shard = sys.argv[-1].split('=')[1]; "
    "open(os.path.join(sys.argv[1], shard.replace('/', '-')), 'w').write("
    "json.dumps({'pool': os.environ['HEVAL_POOL_SIZE'], 'argv': sys.argv[2:]})); "
    "sys.exit(3 if shard == sys.argv[2] else 0)"
)


def test_parallel_starts_every_shard_with_its_pool_and_waits(tmp_path, capsys):
    # A stand-in for `inspect eval` that records what it was given; shard 2/3 fails.
    code = main(
        ["parallel", "--shards", "3", "--cores", "4", "--",
         sys.executable, "-c", RECORDER, str(tmp_path), "2/3"]
    )  # fmt: skip
    assert code == 1
    runs = {path.name: json.loads(path.read_text()) for path in tmp_path.iterdir()}
    assert sorted(runs) == ["1-3", "2-3", "3-3"]
    assert [runs[name]["pool"] for name in ("1-3", "2-3", "3-3")] == ["2", "1", "1"]
    key = run_key([sys.executable, "-c", RECORDER, str(tmp_path), "2/3"])
    assert runs["1-3"]["argv"] == [
        "2/3", "--metadata", f"heval_run={key}", "--display", "plain", "-T", "shard=1/3"
    ]  # fmt: skip
    err = capsys.readouterr().err
    assert "shard 2/3 failed (exit code 3)" in err and "shard 1/3 failed" not in err


def test_parallel_without_a_command_says_what_to_give(capsys):
    assert main(["parallel", "--shards", "2"]) == 1
    assert "give the eval command after --" in capsys.readouterr().err


@pytest.mark.parametrize(
    "given, env, passed",
    [
        (["--limit", "10"], {}, ["-T", "limit=10"]),
        (["--limit=11-20"], {}, ["-T", "limit=11-20"]),
        (
            ["--sample-id", "HumanEval/0,HumanEval/7"],
            {},
            ["-T", "sample_id=HumanEval/0,HumanEval/7"],
        ),
        ([], {"INSPECT_EVAL_LIMIT": "5"}, ["-T", "limit=5"]),
        ([], {"INSPECT_EVAL_SAMPLE_ID": "HumanEval/3"}, ["-T", "sample_id=HumanEval/3"]),
    ],
)  # fmt: skip
def test_inspects_sample_options_pick_the_samples_of_the_whole_run(given, env, passed):
    command = [INSPECT, "eval", "heval_inspect/humaneval", *given, "--epochs", "2"]
    translated, environ = whole_run_selection(command, {"PATH": "/bin", **env})
    assert translated == [INSPECT, "eval", "heval_inspect/humaneval", "--epochs", "2", *passed]
    assert environ == {"PATH": "/bin"}  # the shards' Inspect does not apply them again


@pytest.mark.parametrize(
    "given, env",
    [
        (["--limit", "3", "--sample-shuffle"], {}),
        (["--limit", "3"], {"INSPECT_EVAL_SAMPLE_SHUFFLE": "1"}),
    ],
)
def test_a_limit_of_a_shuffled_run_is_refused(given, env, capsys, monkeypatch):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = main(["parallel", "--shards", "2", "--", INSPECT, "eval", "t", *given])
    err = capsys.readouterr().err
    assert code == 1 and "--limit with --sample-shuffle" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("program", ["no-such-inspect", "/no/such/folder/inspect"])
def test_a_command_that_cannot_start_is_one_line_saying_what_to_do(program, capsys):
    code = main(["parallel", "--shards", "2", "--", program, "eval", "heval_inspect/humaneval"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1, err
    assert "Errno" not in err and "Traceback" not in err
    assert (
        ("is not on PATH: activate" in err)
        if "/" not in program
        else (f"cannot run {program}: no executable file there" in err)
    )


def test_inspect_off_path_runs_the_one_beside_heval_inspect(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a shell without the virtual environment
    # A task that does not exist: each shard's inspect starts, says so and exits non-zero.
    code = main(["parallel", "--shards", "2", "--", "inspect", "eval", "no_such_task.py"])
    err = capsys.readouterr().err
    assert f"`inspect` is not on PATH; running heval-inspect's own: {INSPECT}" in err
    launched = [line for line in err.splitlines() if f"{INSPECT} eval no_such_task.py" in line]
    assert len(launched) == 2, err  # both shards, with the environment's inspect
    assert code != 0 and "not on PATH, but" not in err


# A stand-in for `inspect eval` that writes its shard's log and exits 0, as Inspect does when a
# task ends in error: shard 2's log says error.
ERROR_LOG = """
import sys
from inspect_ai.log import EvalLog, EvalSpec, EvalConfig, EvalDataset, write_eval_log
argv = sys.argv
shard = argv[argv.index("-T") + 1].split("=")[1]
index, count = map(int, shard.split("/"))
key = argv[argv.index("--metadata") + 1].split("=")[1]
record = {"index": index, "count": count, "tasks": 1, "problems": ["HumanEval/0"],
          "all_tasks": 2, "all_problems": 2, "numbering": "1-based"}
spec = EvalSpec(created="2026-01-01T00:00:00+00:00", task="t", dataset=EvalDataset(),
                model="none/none", config=EvalConfig(),
                metadata={"heval_run": key, "shard": record})
status = "error" if index == 2 else "success"
write_eval_log(EvalLog(eval=spec, status=status), f"{argv[1]}/2026-01-01T00-00-00_t_{index}.json")
"""


def test_a_failed_shard_is_named_with_its_log_or_its_output(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    code = main(
        ["parallel", "--shards", "3", "--cores", "3", "--",
         sys.executable, "-c", ERROR_LOG, str(logs), "--log-dir", str(logs)]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    # Shard 2 exited 0, but its log says error; shard 3 wrote a log too (success), shard 1 also.
    log = logs / "2026-01-01T00-00-00_t_2.json"
    assert f"shard 2/3 failed (its log's status is error): its log is {log}" in err
    assert "shard 1/3 failed" not in err and "shard 3/3 failed" not in err
    # A shard that exits non-zero without a log: where its error is.
    code = main(
        ["parallel", "--shards", "2", "--", sys.executable, "-c", "import sys; sys.exit(4)",
         "--log-dir", str(tmp_path / "none")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "shard 1/2 failed (exit code 4) and wrote no log: its error is in its output" in err
    assert "shard 2/2 failed (exit code 4)" in err


def test_a_machine_runs_its_range_of_the_shards(tmp_path):
    code = main(
        ["parallel", "--shards", "8", "--run", "3-4", "--cores", "2", "--",
         sys.executable, "-c", RECORDER, str(tmp_path), "none"]
    )  # fmt: skip
    assert code == 0
    runs = {path.name: json.loads(path.read_text()) for path in tmp_path.iterdir()}
    assert sorted(runs) == ["3-8", "4-8"] and {run["pool"] for run in runs.values()} == {"1"}
    assert shard_range("5", 8) == range(5, 6)


@pytest.mark.parametrize("run", ["0-2", "3-2", "7-9", "9", "a-b", "-2"])
def test_a_bad_range_is_refused(run, capsys):
    assert main(["parallel", "--shards", "8", "--run", run, "--", "true"]) == 1
    assert f"--run {run}: give the first and last shard" in capsys.readouterr().err


def test_one_container_takes_the_compose_files_memory_and_open_files():
    from heval_inspect.sandbox import COMPOSE_FILE
    from heval_inspect.sandbox.capacity import container_share

    # compose.yaml: mem_limit 1792m, 256 open files per process; the programs' 64 tasks (the
    # kernel's count of their uid) and the container's own 8 processes.
    assert container_share(str(COMPOSE_FILE)) == {"memory": 1792 << 20, "files": (64 + 8) * 256}


CONTAINER = {"memory": 1792 << 20, "files": 64 * 256}


@pytest.mark.parametrize(
    "cpus, memory, files, size",
    [
        (2, 24 << 30, 2_466_093, 2),  # this machine: one container per usable core
        (64, 64 << 30, 6_000_000, 18),  # many CPUs: as many as half the memory holds
        (8, 64 << 30, 100_000, 3),  # a small file table: as many as half of it holds
        (4, 2 << 30, None, 1),  # at least one, whatever the machine
        (4, None, None, 4),  # nothing known of the machine: one per usable core
    ],
)
def test_a_pool_takes_at_most_half_the_machine(cpus, memory, files, size, monkeypatch):
    from heval_inspect.sandbox.capacity import pool_size

    monkeypatch.delenv("HEVAL_POOL_SIZE", raising=False)
    monkeypatch.setattr("heval_inspect.sandbox.capacity.usable_cores", lambda: cpus)
    assert pool_size(memory, files, CONTAINER) == size


def test_a_pool_larger_than_half_the_machine_is_refused(monkeypatch):
    from heval_inspect.sandbox.capacity import pool_size

    monkeypatch.setenv("HEVAL_POOL_SIZE", "7")
    with pytest.raises(ValueError, match=r"HEVAL_POOL_SIZE=7: .* use at most 6\."):
        pool_size(24 << 30, 2_466_093, CONTAINER)
    monkeypatch.setenv("HEVAL_POOL_SIZE", "6")
    assert pool_size(24 << 30, 2_466_093, CONTAINER) == 6


def test_shards_together_get_no_more_containers_than_the_machine_holds(tmp_path, capsys):
    from heval_inspect.sandbox import COMPOSE_FILE
    from heval_inspect.sandbox.capacity import (
        container_share,
        containers_the_machine_holds,
        file_table,
    )

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    most = containers_the_machine_holds(memory, file_table(), container_share(str(COMPOSE_FILE)))
    code = main(
        ["parallel", "--shards", "2", "--cores", "100000", "--",
         sys.executable, "-c", RECORDER, str(tmp_path), "none"]
    )  # fmt: skip
    assert code == 0
    pools = [int(json.loads(path.read_text())["pool"]) for path in tmp_path.iterdir()]
    assert sum(pools) == max(most, 2)  # at least one container per shard
    assert f"the shards share {most}" in capsys.readouterr().err


def test_the_key_of_a_command_leaves_out_its_display_only():
    command = ["inspect", "eval", "heval_inspect/humaneval", "--model", "none"]
    assert run_key(command) == run_key([*command, "--display", "plain"])
    assert run_key(command) == run_key([*command, "--display=rich"])
    assert run_key(command) != run_key([*command, "-T", "k=3"])


@pytest.mark.docker
@pytest.mark.data
def test_a_rerun_starts_only_the_shards_without_a_successful_log(tmp_path, capsys):
    logs = tmp_path / "logs"
    command = [
        str(Path(sys.executable).with_name("inspect")), "eval", "heval_inspect/humaneval",
        "--model", "none", "--solver", "heval_inspect/reference", "--limit", "3",
        "--log-dir", str(logs),
    ]  # fmt: skip

    def run(*extra: str) -> tuple[int, set[str], str]:
        code = main(["parallel", "--shards", "2", "--cores", "2", "--", *command, *extra])
        return code, {path.name for path in logs.glob("*.eval")}, capsys.readouterr().err

    code, first, _ = run()
    assert code == 0 and len(first) == 2
    # Again: both shards are done, nothing starts and nothing is written.
    code, again, err = run()
    assert code == 0 and again == first
    assert err.count("already has a successful log of this command") == 2
    # Shard 2's log lost (or never finished): only shard 2 runs.
    shard_2 = next(
        name for name in first
        if read_eval_log(str(logs / name), header_only=True).eval.metadata["shard"]["index"] == 2
    )  # fmt: skip
    (logs / shard_2).unlink()
    code, after, err = run()
    assert code == 0 and len(after) == 2 and after > first - {shard_2}
    assert "shard 1/2 already has a successful log" in err and "shard=2/2" in err
    assert "shard=1/2" not in err
    # Another command into the same folder is another run: both of its shards run.
    code, other, _ = run("-T", "timeout=2")
    assert code == 0 and len(other) == 4


@pytest.mark.docker
@pytest.mark.data
@pytest.mark.parametrize(
    "options, env, ids",
    [
        (["--limit", "3"], {}, ["HumanEval/0", "HumanEval/1", "HumanEval/2"]),
        ([], {"INSPECT_EVAL_LIMIT": "11-13"}, ["HumanEval/10", "HumanEval/11", "HumanEval/12"]),
        (["--sample-id", "HumanEval/7,HumanEval/40"], {}, ["HumanEval/7", "HumanEval/40"]),
    ],
)
def test_limit_and_sample_id_mean_the_whole_run(options, env, ids, tmp_path, monkeypatch):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    logs = tmp_path / "logs"
    command = [INSPECT, "eval", "heval_inspect/humaneval", "--model", "none",
               "--solver", "heval_inspect/reference", *options, "--log-dir", str(logs)]  # fmt: skip
    assert main(["parallel", "--shards", "2", "--cores", "2", "--", *command]) == 0
    shard_logs = [read_eval_log(str(path)) for path in sorted(logs.glob("*.eval"))]
    assert len(shard_logs) == 2 and {log.status for log in shard_logs} == {"success"}
    assert sorted(str(s.id) for log in shard_logs for s in log.samples) == sorted(ids)
    assert {log.eval.metadata["shard"]["all_tasks"] for log in shard_logs} == {len(ids)}
