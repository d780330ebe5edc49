"""Each log's table of samples, kept after its first reading.

Most of a report's time is Inspect parsing the logs' sample summaries (about half a millisecond
per sample and core), and the usual way to use the report is to run it again over the same logs
with one more run added. So the table a log gives (`runs.Samples`, a few short fields per sample)
is kept as a JSON file in the user's cache folder (`~/.cache/heval_inspect/report` on Linux), one
per log path, and used only while the log's size and modification time, Inspect's version and
the code that made the table are those it was made with: a log rewritten in place (`inspect
score`, `edit_score`, a resumed run) is read again. Logs that are not local files (`s3://...`) are
always read. Deleting the folder loses nothing but time.
"""

import hashlib
import json
import os
import tempfile
from contextlib import suppress
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ..host import cache_dir


def key(file: str, reader: str) -> dict[str, Any] | None:
    """What a kept table is valid for: this log file as it is now, read by this code (`reader`,
    a hash of it). None for a log that is not a local file."""
    if "://" in file:
        return None
    try:
        path = Path(file).resolve()
        stat = path.stat()
    except OSError:
        return None
    return {
        "log": str(path),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "inspect_ai": version("inspect_ai"),
        "reader": reader,
    }


def load(key: dict[str, Any] | None) -> dict[str, Any] | None:
    """The table kept under this key, if any."""
    if key is None:
        return None
    try:
        entry = json.loads(_entry(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return entry["table"] if entry.get("key") == key else None


def store(key: dict[str, Any] | None, table: dict[str, Any]) -> None:
    """Keep a log's table under the key taken before the log was read: a log that changed while
    it was read no longer matches it, and is read again next time. A cache that cannot be
    written is skipped (it only saves time)."""
    if key is None:
        return
    entry = _entry(key)
    with suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        try:
            with open(descriptor, "w", encoding="utf-8") as out:
                json.dump({"key": key, "table": table}, out)
            os.replace(temporary, entry)  # whole or not at all, also with two reports at once
        finally:
            with suppress(FileNotFoundError):
                os.unlink(temporary)


def _entry(key: dict[str, Any]) -> Path:
    # One entry per log path: a log read again replaces its old entry.
    return cache_dir("report") / f"{hashlib.sha256(key['log'].encode()).hexdigest()[:32]}.json"
