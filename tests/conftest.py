import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

# The browser the viewer test drives: the system's Chromium (Debian's `chromium` package).
CHROMIUM = os.environ.get("HEVAL_CHROMIUM") or shutil.which("chromium") or "chromium"


@pytest.hookimpl(trylast=True)  # after `-m` has deselected what it deselects
def pytest_collection_modifyitems(config, items):
    # Docker and browser tests must run for real: when they are selected and what they need is
    # missing, say so loudly instead of letting them skip.
    if any(item.get_closest_marker("browser") for item in items):
        _require_browser()
    if any(item.get_closest_marker("slurm") for item in items):
        _require_slurm()
    if not any(item.get_closest_marker("docker") for item in items):
        return
    if (
        shutil.which("docker") is None
        or subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0
    ):
        raise pytest.UsageError(
            "Tests marked 'docker' need a running Docker engine (start it, e.g. "
            "`sudo systemctl start docker`), or deselect them with -m 'not docker'."
        )


def _require_slurm() -> None:
    answer = subprocess.run(
        ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, check=False
    ) if shutil.which("sinfo") else None  # fmt: skip
    if answer is None or answer.returncode != 0 or not answer.stdout.strip():
        raise pytest.UsageError(
            "Tests marked 'slurm' need a running Slurm cluster with a node: `.ci/slurm-up` "
            "starts one on this machine (Debian, as root or with sudo), or deselect them with "
            "-m 'not slurm'."
        )


def _require_browser() -> None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing = "PyPI's playwright (pip install -e '.[test]')"
    else:
        missing = None if shutil.which(CHROMIUM) else f"a Chromium at {CHROMIUM}"
    if missing:
        raise pytest.UsageError(
            f"Tests marked 'browser' need {missing}: install Debian's chromium "
            "(`apt-get install chromium`, or set HEVAL_CHROMIUM to a Chromium binary) and the "
            "test extras, or deselect them with -m 'not browser'."
        )


@pytest.fixture(scope="session", autouse=True)
def user_cache_folder(tmp_path_factory) -> Path:
    """The user's cache folder (downloads, the report's kept tables) is a new one for the
    session: tests neither read what an earlier run kept nor write to the home folder."""
    folder = tmp_path_factory.mktemp("user-cache")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def report_logs(tmp_path_factory) -> dict:
    """The report tests' logs (tests/report_logs.py), made once per session in the sandbox."""
    from .report_logs import build

    return build(tmp_path_factory.mktemp("report-logs"))


def docker_runtimes() -> set[str]:
    """The container runtimes the Docker engine knows (runc; runsc where gVisor is registered)."""
    answer = subprocess.run(
        ["docker", "info", "--format", "{{json .Runtimes}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return set(json.loads(answer.stdout or "{}"))


@pytest.fixture(params=["runc", "runsc"])
def runtime(request, monkeypatch) -> str:
    """Each sandbox test that takes it runs under Docker's runc and under gVisor's runsc
    (HEVAL_SANDBOX_RUNTIME); runsc is skipped, and named, where the engine lacks it."""
    if request.param not in docker_runtimes():
        pytest.skip(
            f"Docker has no {request.param} runtime: gVisor's runsc is not installed or not "
            "registered (the README's gVisor section says how; .ci/run does it)."
        )
    monkeypatch.setenv("HEVAL_SANDBOX_RUNTIME", request.param)
    return request.param
