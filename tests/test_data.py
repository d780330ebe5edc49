import contextlib
import functools
import gzip
import http.server
import shutil
import threading

import pytest

from heval_inspect.data import (
    EXAMPLE_PROBLEMS,
    HUMANEVAL,
    OFFICIAL_FILES,
    SUBSETS,
    DataError,
    load_official,
    official_path,
    read_problems,
)
from heval_inspect.tasks import problem_id

EXPECTED_COUNTS = {
    "single_line": 1033,
    "multi_line": 5815,
    "random_span": 1640,
    "random_span_light": 164,
}


@pytest.mark.data
@pytest.mark.parametrize("subset", list(SUBSETS))
def test_official_subsets_load_with_their_published_counts(subset):
    records = load_official(SUBSETS[subset])
    assert len(records) == EXPECTED_COUNTS[subset]
    assert all(set(r) >= {"prompt", "suffix", "canonical_solution", "test"} for r in records)


@pytest.mark.data
def test_humaneval_loads_164_problems():
    records = load_official(HUMANEVAL)
    assert len(records) == 164
    assert records[0]["task_id"] == "HumanEval/0"


@pytest.mark.data
def test_a_flat_folder_of_files_is_accepted(tmp_path):
    shutil.copy(official_path(HUMANEVAL), tmp_path)
    assert len(load_official(HUMANEVAL, tmp_path)) == 164


def test_missing_file_names_the_file_and_the_fix(tmp_path):
    with pytest.raises(DataError, match=r"HumanEval\.jsonl\.gz is not in .*data_dir"):
        load_official(HUMANEVAL, tmp_path)


@pytest.mark.data
def test_truncated_file_is_rejected_by_checksum(tmp_path):
    source = official_path(SUBSETS["single_line"])
    (tmp_path / source.name).write_bytes(source.read_bytes()[:5000])
    with pytest.raises(DataError, match=r"SingleLineInfilling.*not the published"):
        load_official(SUBSETS["single_line"], tmp_path)


@pytest.mark.data
def test_altered_file_is_rejected_by_checksum(tmp_path):
    records = gzip.decompress(official_path(HUMANEVAL).read_bytes())
    (tmp_path / "HumanEval.jsonl.gz").write_bytes(gzip.compress(records.replace(b"==", b"!=", 1)))
    with pytest.raises(DataError, match="altered or truncated"):
        load_official(HUMANEVAL, tmp_path)


@contextlib.contextmanager
def serve(directory):
    """A local HTTP server of `directory`, standing in for the upstream host."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@pytest.fixture
def mirror(tmp_path):
    """A mirror laid out like HEVAL_DATA_DIR: a folder per upstream repository."""
    for file in OFFICIAL_FILES:
        (tmp_path / "mirror" / file.folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(official_path(file), tmp_path / "mirror" / file.folder)
    with serve(tmp_path / "mirror") as url:
        yield url


@pytest.mark.data
def test_download_is_verified_and_cached(monkeypatch, tmp_path, mirror):
    monkeypatch.delenv("HEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HEVAL_DATA_URL", mirror)
    assert len(load_official(SUBSETS["random_span_light"])) == 164
    cached = tmp_path / "heval_inspect" / "data" / "human-eval-infilling"
    assert (cached / SUBSETS["random_span_light"].filename).is_file()
    # A second load reads the cache: the mirror is gone and nothing is fetched.
    monkeypatch.setenv("HEVAL_DATA_URL", "http://127.0.0.1:9")
    assert len(load_official(SUBSETS["random_span_light"])) == 164


def test_download_with_wrong_checksum_caches_nothing(monkeypatch, tmp_path):
    served = tmp_path / "served" / "human-eval"
    served.mkdir(parents=True)
    (served / "HumanEval.jsonl.gz").write_bytes(b"not the data")
    monkeypatch.delenv("HEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with serve(served.parent) as url:
        monkeypatch.setenv("HEVAL_DATA_URL", url)
        with pytest.raises(DataError, match="nothing was cached"):
            load_official(HUMANEVAL)
    assert not list((tmp_path / "cache").rglob("HumanEval.jsonl.gz*"))


def test_unreachable_download_says_how_to_work_offline(monkeypatch, tmp_path):
    monkeypatch.delenv("HEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HEVAL_DATA_URL", "http://127.0.0.1:9")
    with pytest.raises(DataError, match="data_dir=FOLDER"):
        load_official(HUMANEVAL)


@pytest.mark.data
def test_any_problem_file_in_the_reference_format_loads():
    records = read_problems(official_path(EXAMPLE_PROBLEMS))
    assert [r["task_id"] for r in records] == ["test/0"]


def test_problem_file_missing_a_field_names_line_and_field(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"task_id": "x/0", "prompt": "", "test": "", "entry_point": "f"}\n')
    with pytest.raises(DataError, match="line 1: missing field.*canonical_solution"):
        read_problems(path)


@pytest.mark.parametrize(
    "task_id, problem",
    [
        ("HumanEval/12", "HumanEval/12"),
        ("SingleLineInfilling/HumanEval/0/L0", "HumanEval/0"),
        ("MultiLineInfilling/HumanEval/163/L0_L3", "HumanEval/163"),
        ("RandomSpanInfilling/HumanEval/7/2", "HumanEval/7"),
        ("test/0", "test/0"),
    ],
)
def test_problem_id_of_each_task_id_form(task_id, problem):
    assert problem_id(task_id) == problem
