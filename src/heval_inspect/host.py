"""Facts of the machine this process runs on, for any module: its usable cores, its cache folder."""

import os
from pathlib import Path

from platformdirs import user_cache_dir


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cache_dir(kind: str = "data") -> Path:
    """The package's folder of `kind` in the user's cache folder (downloads: "data")."""
    return Path(user_cache_dir("heval_inspect")) / kind
