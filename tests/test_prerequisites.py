"""The test suite on a machine that lacks what some tests need (Docker, gVisor's runsc, Chromium,
Slurm, the data): those tests are skipped, each group named once in the summary with what to
install or start, and the run passes; under HEVAL_TESTS_STRICT=1 the same run fails.

Real pytest runs in a subprocess, with the project's own conftest.py and markers, on a tiny test
file, and a PATH that holds only what the case gives it. Needs none of those prerequisites itself.
"""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
PYPROJECT = TESTS.parent / "pyproject.toml"

TINY_TESTS = """
import pytest

def test_needs_nothing():
    pass

@pytest.mark.docker
def test_docker_one():
    pass

@pytest.mark.docker
def test_docker_two():
    pass

@pytest.mark.docker
def test_under_each_runtime(runtime):
    assert os.environ["HEVAL_SANDBOX_RUNTIME"] == runtime

@pytest.mark.data
def test_data():
    pass

@pytest.mark.slow
def test_slow():
    pass

@pytest.mark.browser
def test_browser():
    pass

@pytest.mark.slurm
def test_slurm():
    pass
"""

# A docker that answers as an engine with the compose plugin and runc only: no gVisor.
DOCKER_WITHOUT_RUNSC = """#!/bin/sh
case "$*" in
    "info --format {{json .Runtimes}}") echo '{"runc": {}, "io.containerd.runc.v2": {}}' ;;
esac
exit 0
"""
# A Slurm whose controller answers but has no node.
SLURM_WITHOUT_NODES = "#!/bin/sh\nexit 0\n"

SECTION = "tests skipped: what they need is missing"


@pytest.fixture
def project(tmp_path) -> Path:
    """A folder with the project's conftest.py and markers, and the tiny test file."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(TESTS / "conftest.py", folder / "conftest.py")
    markers = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]["markers"]
    (folder / "pytest.ini").write_text(
        "[pytest]\naddopts = --strict-markers\nmarkers =\n"
        + "".join(f"    {marker}\n" for marker in markers)
    )
    (folder / "test_tiny.py").write_text("import os\n" + TINY_TESTS)
    return folder


def tools(tmp_path, **scripts: str) -> Path:
    """A folder for PATH holding only the given executables (name: script)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, script in scripts.items():
        (folder / name).write_text(script)
        (folder / name).chmod(0o755)
    return folder


def run_pytest(project: Path, path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """pytest on the tiny tests, with only `path` on PATH, no data folder and no data reachable
    (a closed port stands in for the download), and what `env` adds."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {"HEVAL_DATA_DIR", "HEVAL_CHROMIUM", "HEVAL_TESTS_STRICT", "PYTEST_ADDOPTS"}
    }
    environment |= {"PATH": str(path), "HEVAL_DATA_URL": "http://127.0.0.1:9", **env}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def summary_lines(output: str) -> dict[str, str]:
    """The skipped groups' lines of the summary section, by group name."""
    _, found, section = output.partition(SECTION)
    assert found, output
    lines = section.split("\n=")[0].splitlines()[1:]
    groups = [re.match(r"(\w+): (\d+) tests? skipped", line) for line in lines if line.strip()]
    assert all(groups), lines
    named = {group[1]: line for group, line in zip(groups, filter(str.strip, lines), strict=True)}
    assert len(named) == len(groups), lines  # one line a group, not one a test
    return named


def test_a_machine_with_nothing_skips_each_group_once_and_passes(project, tmp_path):
    run = run_pytest(project, tools(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed, 7 skipped" in run.stdout, run.stdout
    lines = summary_lines(run.stdout)
    assert set(lines) == {"docker", "data", "browser", "slurm"}, lines
    # The count is of the tests that need it; each line says what is missing and what to do.
    assert lines["docker"].startswith("docker: 4 tests skipped")
    assert "`docker` is not on PATH" in lines["docker"]
    assert "https://docs.docker.com/engine/install/" in lines["docker"]
    assert lines["data"].startswith("data: 5 tests skipped")
    assert "127.0.0.1:9" in lines["data"] and "HEVAL_DATA_DIR" in lines["data"]
    assert lines["browser"].startswith("browser: 1 test skipped")
    assert "apt-get install chromium" in lines["browser"]
    assert lines["slurm"].startswith("slurm: 1 test skipped") and "sinfo" in lines["slurm"]
    assert ".ci/slurm-up" in lines["slurm"]


def test_an_engine_without_runsc_runs_the_docker_tests_and_skips_runsc(project, tmp_path):
    path = tools(tmp_path, docker=DOCKER_WITHOUT_RUNSC, sinfo=SLURM_WITHOUT_NODES)
    data = tmp_path / "data"
    data.mkdir()
    run = run_pytest(project, path, "-m", "not browser", HEVAL_DATA_DIR=str(data))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "6 passed, 2 skipped, 1 deselected" in run.stdout, run.stdout
    lines = summary_lines(run.stdout)
    assert set(lines) == {"runsc", "slurm"}, lines
    assert lines["runsc"].startswith("runsc: 1 test skipped")
    assert "gVisor" in lines["runsc"] and "README" in lines["runsc"]
    assert "no node" in lines["slurm"]


def test_deselected_groups_need_nothing_even_in_strict_mode(project, tmp_path):
    selection = "not docker and not browser and not slurm and not data"
    run = run_pytest(project, tools(tmp_path), "-m", selection, HEVAL_TESTS_STRICT="1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed, 7 deselected" in run.stdout, run.stdout
    assert SECTION not in run.stdout


def test_strict_mode_fails_on_anything_missing_and_names_it_all(project, tmp_path):
    run = run_pytest(project, tools(tmp_path), HEVAL_TESTS_STRICT="1")
    assert run.returncode not in (0, 5), run.stdout + run.stderr
    output = run.stdout + run.stderr
    assert "passed" not in output  # nothing ran
    assert "HEVAL_TESTS_STRICT" in output
    for needed in ("`docker` is not on PATH", "chromium", "sinfo", "127.0.0.1:9"):
        assert needed in output, output
    # Strict on a subset fails only on what that subset needs.
    run = run_pytest(project, tools(tmp_path), "-m", "browser", HEVAL_TESTS_STRICT="1")
    assert run.returncode not in (0, 5) and "chromium" in run.stdout + run.stderr
    assert "docker" not in run.stdout + run.stderr and "sinfo" not in run.stdout + run.stderr
