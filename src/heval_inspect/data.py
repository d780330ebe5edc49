"""The official HumanEval and HumanEval-Infilling problem files: where to find them, how to
check them.

Sources, in order: a local folder (the `data_dir` task argument, else the `HEVAL_DATA_DIR`
environment variable), else the user's cache, filled by a download of the files as published at a
pinned upstream commit. Every official file is checked against its SHA-256 and record count before
use, so a run never scores against a truncated or altered benchmark.

The tasks keep the problems they loaded in this process (`remember`), and their samples point at
them by file and task id (`problem_for`): a problem's texts are in each sample's input and in its
score's program already, and Inspect writes a sample's metadata into the log several times over.
A process that did not load the task (`inspect score` re-scoring a log) loads the official file
a sample names again, checked against the checksum the sample carries.
"""

import gzip
import hashlib
import io
import json
import os
import urllib.error
import urllib.request
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import DataError
from .host import cache_dir
from .schema import ORIGINAL, ORIGINAL_VARIANT, SampleMetadata, VariantId
from .variants import variant_records

# Upstream commits the checksums below were taken from (openai/human-eval-infilling and
# openai/human-eval on GitHub).
INFILLING_COMMIT = "88062ff9859c875d04db115b698ed4b0f0395170"
HUMANEVAL_COMMIT = "6d43fb980f9fee3c892a914eda09951f772ad10d"
RAW_GITHUB = "https://raw.githubusercontent.com"

# A mirror with a folder per upstream repository (human-eval-infilling/, human-eval/) can stand
# in for GitHub, for sites that reach the internet only through their own file server.
DATA_URL_ENV = "HEVAL_DATA_URL"
DATA_DIR_ENV = "HEVAL_DATA_DIR"

REQUIRED_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")


@dataclass(frozen=True)
class OfficialFile:
    folder: str  # the upstream repository's name, also the folder in a local copy
    filename: str
    sha256: str
    records: int | None  # problems in the file; None for a file that is not a problem file
    commit: str

    @property
    def url(self) -> str:
        mirror = os.environ.get(DATA_URL_ENV)
        if mirror:
            return f"{mirror.rstrip('/')}/{self.folder}/{self.filename}"
        return f"{RAW_GITHUB}/openai/{self.folder}/{self.commit}/data/{self.filename}"


def _infilling(filename: str, sha256: str, records: int | None) -> OfficialFile:
    return OfficialFile("human-eval-infilling", filename, sha256, records, INFILLING_COMMIT)


HUMANEVAL = OfficialFile(
    "human-eval",
    "HumanEval.jsonl.gz",
    "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef",
    164,
    HUMANEVAL_COMMIT,
)

# The four infilling subsets, keyed by the name users pass as `subsets`.
SUBSETS: dict[str, OfficialFile] = {
    "single_line": _infilling(
        "HumanEval-SingleLineInfilling.jsonl.gz",
        "1277073e7ddce163ef68598c2bca777f688a53df99422f097e37362090f88e1f",
        1033,
    ),
    "multi_line": _infilling(
        "HumanEval-MultiLineInfilling.jsonl.gz",
        "2f341612eee1d35da1357a4f365e0c0b3ba6e2b62eb491e88aaefa4855af0349",
        5815,
    ),
    "random_span": _infilling(
        "HumanEval-RandomSpanInfilling.jsonl.gz",
        "b4f330d8a8ff97bf85d9def497dffcae4d741e506449386a877236e422e33e8d",
        1640,
    ),
    "random_span_light": _infilling(
        "HumanEval-RandomSpanInfillingLight.jsonl.gz",
        "1432250ecac0cb56e6f97f8faf0970419ef892a98fda7e1f5aa4c4b87209b760",
        164,
    ),
}

# The reference harness's worked example (its README expects pass@1 0.3 and pass@10 1.0): one
# problem and ten completions of it, published beside the subsets.
EXAMPLE_PROBLEMS = _infilling(
    "example_problem.jsonl",
    "f066a37097c9bc7fb19a8bcb736cbfbc19e42cb0597766066e75ec6b1187ee9c",
    1,
)
EXAMPLE_SAMPLES = _infilling(
    "example_samples.jsonl",
    "2027662d6b42135bc862c277b061123ff30edf1982eb82d61fc02a0d058417f1",
    None,
)
OFFICIAL_FILES = (HUMANEVAL, *SUBSETS.values(), EXAMPLE_PROBLEMS, EXAMPLE_SAMPLES)


@dataclass(frozen=True)
class ProblemFile:
    """The problems of one file, and which file it was: its path and SHA-256."""

    path: Path
    sha256: str
    records: list[dict]
    variant: VariantId = ORIGINAL_VARIANT  # the records are this variant of the file's (variants/)

    @property
    def source(self) -> str:
        """What its samples point at: the file's name and the start of its SHA-256, and the
        variant ("#renamed-2") if its records are one."""
        source = f"{self.path.name}@{self.sha256[:12]}"
        return f"{source}#{self.variant.tag}" if self.variant.tag else source


def variant_file(file: ProblemFile, variant: VariantId) -> ProblemFile:
    """A problem file's problems as a variant (variants/): the same file (path and SHA-256,
    which the log's provenance records), its records rebuilt, its samples' `source` naming the
    variant."""
    if variant.name == ORIGINAL:
        return file
    return ProblemFile(file.path, file.sha256, variant_records(file.records, variant.tag), variant)


def load_official(file: OfficialFile, data_dir: str | Path | None = None) -> list[dict]:
    """The records of an official file, from a local folder or the download cache, verified."""
    return open_official(file, data_dir).records


def open_official(file: OfficialFile, data_dir: str | Path | None = None) -> ProblemFile:
    """An official problem file, from a local folder or the download cache, verified."""
    path = official_path(file, data_dir)
    records = read_problems(path)
    if len(records) != file.records:
        raise DataError(
            f"{path} holds {len(records)} problems, not {file.records}; {_how_to_fix(file, path)}."
        )
    return ProblemFile(path.resolve(), file.sha256, records)


def official_path(file: OfficialFile, data_dir: str | Path | None = None) -> Path:
    """Where an official file is, checked against its published SHA-256: in the local folder
    (`data_dir`, else $HEVAL_DATA_DIR) if one is given, else in the download cache (downloaded
    on first use)."""
    local = data_dir or os.environ.get(DATA_DIR_ENV)
    if not local:
        path = cache_dir() / file.folder / file.filename
        if not path.exists() or sha256_of(path) != file.sha256:
            _download(file, path)  # which checks the checksum before it caches the file
        return path
    path = _find_local(file, Path(local).expanduser())
    if (digest := sha256_of(path)) != file.sha256:
        raise DataError(
            f"{path} has SHA-256 {digest}, not the published {file.sha256}: the file is altered "
            f"or truncated; {_how_to_fix(file, path)}."
        )
    return path


def _how_to_fix(file: OfficialFile, path: Path) -> str:
    if path.is_relative_to(cache_dir()):
        return f"delete {path} to download it again"
    return (
        f"replace it with the official file ({file.url}), or drop the data_dir argument and "
        f"{DATA_DIR_ENV} to let heval_inspect download it"
    )


def open_problems(path: str | Path) -> ProblemFile:
    """Any problem file in the reference's format (see read_problems), with its SHA-256."""
    records = read_problems(path)
    return ProblemFile(Path(path).resolve(), sha256_of(Path(path)), records)


def read_problems(path: str | Path) -> list[dict]:
    """Problems in the reference harness's format (JSON lines, gzipped or not), checked for shape.

    Used for the official files and for any other problem file, such as the reference's
    `example_problem.jsonl` or a team's private set.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Problem file {path} does not exist.")
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    try:
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                record = json.loads(line)
                missing = [field for field in REQUIRED_FIELDS if field not in record]
                if missing:
                    raise DataError(
                        f"{path}, line {number}: missing field(s) {', '.join(missing)}; each line "
                        f"needs {', '.join(REQUIRED_FIELDS)} (and `suffix` for infilling)."
                    )
                records.append(record)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"{path} is not a readable problem file (JSON lines): {error}") from error
    if not records:
        raise DataError(f"{path} holds no problems.")
    return records


def _rows(path: str | Path, lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(task id, completion) of each line of a completion file in the reference harness's format.

    One JSON object per line, {"task_id": ..., "completion": ...}; several lines for one task are
    its samples 1, 2, ... (epochs, for pass@k).
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            task_id, completion = str(row["task_id"]), row["completion"]
            if not isinstance(completion, str):
                raise TypeError("completion is not a string")
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise DataError(
                f"{path}, line {number}: expected a JSON object with a task_id and a "
                f"completion string ({error})."
            ) from error
        yield task_id, completion


def read_completions(path: str | Path, only: Collection[str] | None = None) -> dict[str, list[str]]:
    """The completions of a file per task id, in file order; `only`: of these task ids alone
    (from the file's one read, `check_completions`)."""
    completions = check_completions(path).completions
    return {
        task_id: list(texts)
        for task_id, texts in completions.items()
        if only is None or task_id in only
    }


def count_completions(path: str | Path) -> dict[str, int]:
    """How many completions a file has for each task id, in file order (the file checked as
    `read_completions` checks it)."""
    return dict(check_completions(path).counts)


@dataclass(frozen=True)
class CheckedCompletions:
    """A completion file checked (each line as `read_completions` reads it): its SHA-256 and its
    completions per task id, in file order, all from one read of it."""

    sha256: str
    completions: Mapping[str, tuple[str, ...]]

    @property
    def counts(self) -> dict[str, int]:
        """How many completions it has for each task id, in file order."""
        return {task_id: len(texts) for task_id, texts in self.completions.items()}


# The completion files checked in this process, by path and the file's identity on disk (size,
# modification time, inode): the task, its replay solver and each log's task of `heval-inspect
# score` check one file, and read it once for all of them. Its texts are kept for the replay
# (a few MB for the largest runs, 50,000 rows).
_CHECKED: dict[tuple[Path, int, int, int], CheckedCompletions] = {}


def check_completions(path: str | Path) -> CheckedCompletions:
    """A completion file checked, read once while it is unchanged: its checksum and its
    completions come from the same bytes."""
    try:
        status = Path(path).stat()
        identity = (Path(path).resolve(), status.st_size, status.st_mtime_ns, status.st_ino)
        if identity in _CHECKED:
            return _CHECKED[identity]
        content = Path(path).read_bytes()
        # Split into lines as `open` does (universal newlines), so that line numbers agree.
        lines = io.StringIO(content.decode("utf-8"), newline=None)
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"Cannot read the completion file {path}: {error}") from error
    completions: dict[str, list[str]] = {}
    for task_id, completion in _rows(path, lines):
        completions.setdefault(task_id, []).append(completion)
    checked = CheckedCompletions(
        hashlib.sha256(content).hexdigest(),
        {task_id: tuple(texts) for task_id, texts in _not_empty(completions, path).items()},
    )
    _CHECKED[identity] = checked
    return checked


def _not_empty(completions: dict[str, Any], path: str | Path) -> dict[str, Any]:
    if not completions:
        raise DataError(f"The completion file {path} holds no completions.")
    return completions


# The problems of the tasks made in this process, by (source, task id).
_REMEMBERED: dict[tuple[str, str], dict] = {}


def remember(problems: ProblemFile) -> ProblemFile:
    """Keep a file's problems for the solvers and the scorer to find by source and task id."""
    for record in problems.records:
        # HumanEval's records have no suffix: the reference harness's program is the same.
        _REMEMBERED[(problems.source, record["task_id"])] = {"suffix": "", **record}
    return problems


def problem_for(task_id: str, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """The problem a sample asks: its `prompt`, `suffix`, `test` and `entry_point`.

    Samples of this package's tasks name their problem file in metadata["source"] (its name and
    the start of its SHA-256); a sample of another dataset can carry the problem's fields in its
    metadata instead. A process that has not loaded that file (`inspect score`) loads it now if
    it is an official one (from $HEVAL_DATA_DIR or the download cache, as the tasks do).
    """
    if "test" in metadata:
        return {"suffix": "", **metadata}
    source = SampleMetadata.read(metadata, task_id).source
    if not source:
        raise DataError(
            f"Sample {task_id} names no problem file (no `source` in its metadata): "
            f"heval_inspect's solvers and scorer work on the package's tasks, or on samples "
            f"whose metadata holds prompt, suffix, test and entry_point."
        )
    if (source, task_id) not in _REMEMBERED:
        _load(source)
    record = _REMEMBERED.get((source, task_id))
    if record is None:
        if any(each == source for each, _ in _REMEMBERED):
            raise DataError(f"{source} holds no problem {task_id}.")
        name = source.partition("@")[0]
        namesakes = sorted({each for each, _ in _REMEMBERED if each.partition("@")[0] == name})
        other = f" ({', '.join(namesakes)} is loaded: another file)" if namesakes else ""
        raise DataError(
            f"The problem of sample {task_id} comes from {source}, which is not loaded in this "
            f"process{other}. To re-score a log of your own problem file with `inspect score`, "
            f"name that very file: --scorer heval_inspect/unit_tests -S problem_file=PATH."
        )
    return record


def _load(source: str) -> None:
    """Load the problems a sample's `source` names: an official file (see _load_official), or a
    variant ("...#renamed-2") of a file loaded or official, built again."""
    file_source, _, variant = source.partition("#")
    if not any(each == file_source for each, _ in _REMEMBERED):
        _load_official(file_source)
    if variant:
        records = [record for (each, _), record in _REMEMBERED.items() if each == file_source]
        for record in variant_records(records, variant):
            _REMEMBERED[(source, record["task_id"])] = record


def _load_official(source: str) -> None:
    """Load the official problem file a sample's `source` names, if it is one, once its
    checksum is the one the sample was made from."""
    name, _, digest = source.partition("@")
    for file in OFFICIAL_FILES:
        if file.filename != name or file.records is None:
            continue
        if not digest or not file.sha256.startswith(digest):
            raise DataError(
                f"These samples were made from {source}, not from the published {name} "
                f"(SHA-256 {file.sha256[:12]}...) that this version of heval_inspect scores: "
                f"re-score them with the heval_inspect version that made them."
            )
        remember(open_official(file))


def official_copies(sha256: str) -> list[Path]:
    """Where a benchmark problem file (HumanEval's or an infilling subset's) with this SHA-256
    would be on this machine: in $HEVAL_DATA_DIR, as the tasks look there, and in the download
    cache. Nothing is downloaded, and the candidates may be absent or altered: check them."""
    local = os.environ.get(DATA_DIR_ENV)
    candidates: list[Path] = []
    for file in (HUMANEVAL, *SUBSETS.values()):
        if file.sha256 == sha256:
            if local:
                candidates += _local_candidates(file, Path(local).expanduser())
            candidates.append(cache_dir() / file.folder / file.filename)
    return candidates


def _local_candidates(file: OfficialFile, folder: Path) -> tuple[Path, Path]:
    # Accept both a folder per upstream repository (human-eval-infilling/, human-eval/) and a flat
    # folder holding the files themselves.
    return folder / file.folder / file.filename, folder / file.filename


def _find_local(file: OfficialFile, folder: Path) -> Path:
    for candidate in _local_candidates(file, folder):
        if candidate.is_file():
            return candidate
    raise DataError(
        f"{file.filename} is not in {folder} (looked in {folder / file.folder} and {folder}). "
        f"Put the official file there (from {file.url}), or drop the data_dir argument and "
        f"{DATA_DIR_ENV} to let heval_inspect download it."
    )


def _download(file: OfficialFile, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".part")
    try:
        with urllib.request.urlopen(file.url, timeout=60) as response:
            partial.write_bytes(response.read())
    except (urllib.error.URLError, OSError) as error:
        partial.unlink(missing_ok=True)
        raise DataError(
            f"Could not download {file.filename} from {file.url}: {error}. Without internet "
            f"access, put the official files in a folder and pass it as -T data_dir=FOLDER or "
            f"set {DATA_DIR_ENV}=FOLDER."
        ) from error
    if (digest := sha256_of(partial)) != file.sha256:
        partial.unlink()
        raise DataError(
            f"The download of {file.filename} from {file.url} has SHA-256 {digest}, not the "
            f"published {file.sha256}; nothing was cached. Retry, or use a local copy "
            f"(-T data_dir=FOLDER)."
        )
    partial.replace(path)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
