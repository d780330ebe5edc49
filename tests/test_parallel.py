"""`heval-inspect parallel`: shard processes with pools that share the cores, and reruns that skip
the shards already done (that one runs real shards in the sandbox)."""

import json
import os
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from heval_inspect.cli import main
from heval_inspect.parallel import pool_sizes, run_key, shard_commands, shard_range


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
    from heval_inspect.sandbox.pool import container_share

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
    from heval_inspect.sandbox.pool import pool_size

    monkeypatch.delenv("HEVAL_POOL_SIZE", raising=False)
    monkeypatch.setattr("heval_inspect.sandbox.pool.usable_cores", lambda: cpus)
    assert pool_size(memory, files, CONTAINER) == size


def test_a_pool_larger_than_half_the_machine_is_refused(monkeypatch):
    from heval_inspect.sandbox.pool import pool_size

    monkeypatch.setenv("HEVAL_POOL_SIZE", "7")
    with pytest.raises(ValueError, match=r"HEVAL_POOL_SIZE=7: .* use at most 6\."):
        pool_size(24 << 30, 2_466_093, CONTAINER)
    monkeypatch.setenv("HEVAL_POOL_SIZE", "6")
    assert pool_size(24 << 30, 2_466_093, CONTAINER) == 6


def test_shards_together_get_no_more_containers_than_the_machine_holds(tmp_path, capsys):
    from heval_inspect.sandbox import COMPOSE_FILE
    from heval_inspect.sandbox.pool import (
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
