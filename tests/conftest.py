import fcntl
import functools
import json
import os
import shutil
import signal
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

# The browser the viewer test drives: the system's Chromium (Debian's `chromium` package).
CHROMIUM = os.environ.get("HEVAL_CHROMIUM") or shutil.which("chromium") or "chromium"


# HEVAL_TESTS_STRICT=1 (CI): a selected test whose prerequisite is missing fails the run instead
# of being skipped, so that CI cannot pass by skipping what it is there to run.
STRICT_ENV = "HEVAL_TESTS_STRICT"
SKIPPED_GROUPS = pytest.StashKey[dict[str, tuple[int, str]]]()
SUMMARY_TITLE = f"tests skipped: what they need is missing ({STRICT_ENV}=1 fails instead)"
WORKER_SKIPPED_GROUPS = "heval_skipped_groups"
STRICT_FAILURE = pytest.StashKey[str]()


@dataclass(frozen=True)
class Prerequisite:
    """What a group of tests needs: `missing()` says what is missing and what to do, or None."""

    group: str
    needed_by: Callable[[pytest.Item], bool]
    missing: Callable[[], str | None]


def _marked(name: str) -> Callable[[pytest.Item], bool]:
    return lambda item: item.get_closest_marker(name) is not None


def _runs_under_runsc(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("runtime") == "runsc"


def _run(*command: str) -> subprocess.CompletedProcess | None:
    """The command's result, or None when it is not on PATH."""
    if shutil.which(command[0]) is None:
        return None
    try:
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 1, "", "no answer in 60 s")


def _first_line(answer: subprocess.CompletedProcess) -> str:
    return next(iter((answer.stderr or answer.stdout).strip().splitlines()), "no output")


@functools.cache  # the runsc check asks too
def _docker_missing() -> str | None:
    install = (
        "install Docker Engine 24 or newer with the compose v2 plugin "
        "(https://docs.docker.com/engine/install/) and start it "
        "(e.g. `sudo systemctl start docker`)"
    )
    if (info := _run("docker", "info")) is None:
        return f"a running Docker engine: `docker` is not on PATH; {install}"
    if info.returncode != 0:
        return f"a running Docker engine: `docker info` fails ({_first_line(info)}); {install}"
    compose = _run("docker", "compose", "version")
    if compose is None or compose.returncode != 0:
        return f"Docker's compose v2 plugin: `docker compose version` fails; {install}"
    return None


def _runsc_missing() -> str | None:
    if _docker_missing() is not None:
        return None  # those tests are the docker group's already
    if "runsc" in docker_runtimes():
        return None
    return (
        "gVisor's runsc runtime, which Docker does not have: install gVisor and register it as "
        "the runtime `runsc` (the README's gVisor section says how; .ci/run does it)"
    )


def _data_missing() -> str | None:
    # Read before the package is imported (it imports Inspect: seconds, in each pytest run).
    if os.environ.get("HEVAL_DATA_DIR"):
        return None  # the tests check the folder's files themselves, with a clear error
    from heval_inspect.data import DATA_DIR_ENV, DATA_URL_ENV, HUMANEVAL

    url = HUMANEVAL.url
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=15):
            return None
    except (OSError, ValueError) as error:
        return (
            f"the official data files: {DATA_DIR_ENV} is not set and {url} cannot be reached "
            f"({error}); connect to the internet, or set {DATA_DIR_ENV} to a folder holding "
            f"openai's human-eval/ and human-eval-infilling/ data folders (or {DATA_URL_ENV} to "
            "a mirror of them)"
        )


def _browser_missing() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "PyPI's playwright: install the test extras (`pip install -e '.[test]'`)"
    if shutil.which(CHROMIUM):
        return None
    return (
        f"a Chromium (`{CHROMIUM}` is not on PATH): install Debian's chromium "
        "(`apt-get install chromium`), or set HEVAL_CHROMIUM to a Chromium binary"
    )


def _slurm_missing() -> str | None:
    start = "`.ci/slurm-up` starts one on this machine (Debian, as root or with sudo)"
    if (answer := _run("sinfo", "-h", "-o", "%T")) is None:
        return f"a Slurm cluster with a node: `sinfo` is not on PATH; {start}"
    if answer.returncode != 0:
        return f"a Slurm cluster with a node: `sinfo` fails ({_first_line(answer)}); {start}"
    if not answer.stdout.strip():
        return f"a Slurm cluster with a node: `sinfo` lists no node; {start}"
    return None


# Every prerequisite a test can have (the markers of pyproject.toml, and the `runtime` fixture's
# runsc); `slow` needs only time. The docker tests read the official data files too.
PREREQUISITES = (
    Prerequisite("docker", _marked("docker"), _docker_missing),
    Prerequisite("runsc", _runs_under_runsc, _runsc_missing),
    Prerequisite(
        "data", lambda item: _marked("data")(item) or _marked("docker")(item), _data_missing
    ),
    Prerequisite("browser", _marked("browser"), _browser_missing),
    Prerequisite("slurm", _marked("slurm"), _slurm_missing),
)


def pytest_configure(config):
    # A shell starts a background job (`pytest &`, `nohup`) with Ctrl-C's signal ignored, and
    # every process the tests start would inherit that: the tests that interrupt a run as a
    # user's Ctrl-C does would see it ignored. Give the tests' processes a terminal's default.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(trylast=True)  # after `-m` has deselected what it deselects
def pytest_collection_modifyitems(config, items):
    # Only what the selected tests need is checked, once per group. A test that needs something
    # missing is skipped (a fresh machine passes the README's test command), and its group is
    # named once in the summary; in strict mode the run stops here instead.
    groups = {}
    for prerequisite in PREREQUISITES:
        needing = [item for item in items if prerequisite.needed_by(item)]
        if needing and (missing := prerequisite.missing()):
            groups[prerequisite.group] = (needing, missing)
    if groups and os.environ.get(STRICT_ENV, "") not in ("", "0"):
        message = (
            f"{STRICT_ENV} is set, and selected tests need what is missing here:\n"
            + "\n".join(f"- {group}: {missing}" for group, (_, missing) in groups.items())
            + "\nProvide it, or deselect those tests: -m 'not MARKER' (-k 'not runsc' for runsc)."
        )
        if not hasattr(config, "workeroutput"):
            raise pytest.UsageError(message)
        # A pytest-xdist worker cannot stop the run before it starts (its controller would
        # report a crash): each of those tests fails with the message instead.
        for needing, _ in groups.values():
            for item in needing:
                item.stash[STRICT_FAILURE] = message
        return
    for needing, missing in groups.values():
        for item in needing:
            item.add_marker(pytest.mark.skip(reason=f"needs {missing}"))
    config.stash[SKIPPED_GROUPS] = {
        group: (len(needing), missing) for group, (needing, missing) in groups.items()
    }
    if hasattr(config, "workeroutput"):  # a pytest-xdist worker: its controller prints them
        config.workeroutput[WORKER_SKIPPED_GROUPS] = json.dumps(config.stash[SKIPPED_GROUPS])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist's controller, as a worker ends: every worker collected every test, so any
    one's skipped groups are the run's."""
    if groups := getattr(node, "workeroutput", {}).get(WORKER_SKIPPED_GROUPS):
        node.config.stash[SKIPPED_GROUPS] = {
            group: tuple(value) for group, value in json.loads(groups).items()
        }


def pytest_runtest_setup(item):
    if message := item.stash.get(STRICT_FAILURE, None):
        pytest.fail(message, pytrace=False)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    groups = config.stash.get(SKIPPED_GROUPS, {})
    if not groups:
        return
    terminalreporter.section(SUMMARY_TITLE, yellow=True)
    for group, (count, missing) in groups.items():
        tests = "test" if count == 1 else "tests"
        terminalreporter.line(f"{group}: {count} {tests} skipped: need {missing}.")


@pytest.fixture(scope="session", autouse=True)
def user_cache_folder(tmp_path_factory) -> Path:
    """The user's cache folder (downloads, the report's kept tables) is a new one for the
    session: tests neither read what an earlier run kept nor write to the home folder."""
    folder = tmp_path_factory.mktemp("user-cache")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def report_logs(tmp_path_factory) -> dict:
    """The report tests' logs (tests/report_logs.py), made once per run in the sandbox: under
    pytest-xdist (`-n`), by the first worker that needs them, while the others wait."""
    from .report_logs import build

    if "PYTEST_XDIST_WORKER" not in os.environ:
        return build(tmp_path_factory.mktemp("report-logs"))
    shared = tmp_path_factory.getbasetemp().parent  # the run's, above each worker's own
    with open(shared / "report-logs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = shared / "report-logs.json"
        if not made.exists():
            (work := shared / "report-logs").mkdir()
            made.write_text(json.dumps(build(work)))
        return json.loads(made.read_text())


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
    (HEVAL_SANDBOX_RUNTIME); runsc is skipped, and named, where the engine lacks it (the
    `runsc` prerequisite above)."""
    monkeypatch.setenv("HEVAL_SANDBOX_RUNTIME", request.param)
    return request.param


@pytest.fixture
def another_runs_pool():
    """A container labelled as another run's pool container, started a second into the test,
    with a process of a program's uid: another developer's tests or CI on the same engine. The
    test must neither count nor touch it (tests/own_containers.py)."""
    from heval_inspect.sandbox import COMPOSE_FILE, compose_service
    from heval_inspect.sandbox.executor import PROGRAM_UID_BASE
    from heval_inspect.sandbox.pool import BUILD_PROJECT

    from .own_containers import AnotherRunsPool

    build = ["docker", "compose", "-p", BUILD_PROJECT, "-f", str(COMPOSE_FILE), "build"]
    subprocess.run(build, check=True, capture_output=True)
    other = AnotherRunsPool(compose_service()["image"], PROGRAM_UID_BASE + 4242)
    try:
        yield other
        assert other.untouched(), f"the test touched another run's container {other.container}"
    finally:
        other.remove()
