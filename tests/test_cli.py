"""`heval-inspect` as a user meets it: its version, its help, and its errors, each one line."""

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

HEVAL_INSPECT = str(Path(sys.executable).with_name("heval-inspect"))


def test_version_is_the_installed_packages():
    answer = subprocess.run(
        [HEVAL_INSPECT, "--version"], capture_output=True, text=True, check=False
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout == f"heval-inspect {version('heval-inspect')}\n"
