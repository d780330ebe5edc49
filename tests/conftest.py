import os
import shutil
import subprocess
from pathlib import Path

import pytest

# The official files as published, provided next to the project (never committed here).
SHARED_DATA = (Path(__file__).parents[1] / ".." / "shared" / "data").resolve()
INFILLING_DATA = SHARED_DATA / "human-eval-infilling"


def pytest_collection_modifyitems(config, items):
    # Docker tests must run for real: when they are selected and no engine answers, say so loudly
    # instead of letting them skip.
    if not any(item.get_closest_marker("docker") for item in items):
        return
    if (
        shutil.which("docker") is None
        or subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0
    ):
        raise pytest.UsageError(
            "Tests marked 'docker' need a running Docker engine (start it, e.g. "
            "`../shared/tools/docker-engine.sh up`), or deselect them with -m 'not docker'."
        )


def pytest_configure(config):
    # Every test reads the official files from ../shared/data, as users do with HEVAL_DATA_DIR.
    if not SHARED_DATA.is_dir():
        raise pytest.UsageError(f"The official data files are expected in {SHARED_DATA}.")
    os.environ["HEVAL_DATA_DIR"] = str(SHARED_DATA)
