"""What each log records about how its verdicts were made, in the eval's metadata.

`inspect log dump LOG` shows it under `eval.metadata`: the task version in inspect_evals' "N-X"
scheme (`full_task_version`, `task_comparability_version` N, also the log's `task_version`, and
`task_interface_version` X), and under `provenance`: the package (version and a hash of its source
files), every data file the run read with its SHA-256, the sandbox (kind; image and base image
with their ids; hashes of the executor and the compose file), the limits, and the prompt (a hash
of the chat templates, or the FIM family's layout and stop tokens). Two logs that differ in any of
these may not be comparable; CHANGELOG.md says which changes moved scores.
"""

import hashlib
import importlib.metadata
from pathlib import Path
from typing import Any

from inspect_ai.hooks import Hooks, TaskStart, hooks

from . import prompts
from .prompts import FimFormat
from .sandbox.provenance import image_ids, limits, sandbox_provenance
from .schema import ORIGINAL_VARIANT, DataFile, EvalMetadata, Provenance, VariantId, is_ours

PACKAGE = "heval-inspect"
PACKAGE_DIR = Path(__file__).parent
SOURCE_SUFFIXES = (".py", ".yaml", "Dockerfile")


def task_version(version: str) -> int:
    """The comparability number of an "N-X" version: what Inspect logs as `task_version`."""
    return int(version.split("-")[0])


def eval_metadata(
    version: str,
    data_files: list[DataFile],
    sandbox_kind: str,
    timeout: float,
    memory_limit: int,
    fim: FimFormat | None,
    variant: VariantId = ORIGINAL_VARIANT,
) -> dict[str, Any]:
    """The eval metadata of a run of one of the package's tasks.

    Args:
        version: The task's version, "N-X".
        data_files: Each file the run reads (its problem files, then its completion file).
        sandbox_kind: "pool", "docker" or "local".
        timeout: The time limit of each program (seconds).
        memory_limit: The memory a program's processes may hold together (MiB).
        fim: The FIM family the prompts are written for, or None for the chat prompts.
        variant: The tasks' variant (`-T variant`): the original's adds nothing.
    """
    comparability, interface = version.split("-")
    return EvalMetadata(
        full_task_version=version,
        task_comparability_version=int(comparability),
        task_interface_version=interface,
        provenance=Provenance(
            package={"name": PACKAGE, "version": _version(), "source_sha256": source_sha256()},
            data_files=data_files,
            sandbox=sandbox_provenance(sandbox_kind),
            limits=limits(sandbox_kind, timeout, memory_limit),
            prompt=_prompt(fim),
        ),
        variant=variant,
    ).task_metadata()


def source_sha256() -> str:
    """One hash of the package's source files (their paths and contents), so that two checkouts
    that carry the same version number but different code are told apart."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.is_file() and path.name.endswith(SOURCE_SUFFIXES):
            digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@hooks(
    name="heval_inspect_sandbox_images",
    description="heval_inspect: records the ids of the sandbox image (and its base) in the log.",
)
class SandboxImages(Hooks):
    """Fills in the image ids once the sandbox has built its image, before any sample runs.

    The task's metadata is written before its sandbox starts, and the image is (re)built when it
    starts (from a base image the environment may choose), so its id is only known here. The
    eval spec given to this hook is the one the log's header is written from when the run ends.
    """

    async def on_task_start(self, data: TaskStart) -> None:
        if not is_ours(data.spec.task_registry_name):
            return
        # The header's own record (not a copy): the ids are filled into it.
        sandbox = EvalMetadata.read(data.spec.metadata).provenance.sandbox
        if sandbox.get("image"):
            sandbox.update(await image_ids(sandbox["image"], sandbox["base_image"]))


def _prompt(fim: FimFormat | None) -> dict[str, Any]:
    if fim is not None:
        return {
            "style": "fim",
            "fim_format": fim.name,
            "layout": fim.layout,
            "stop": list(fim.stop),
        }
    templates = "\0".join([prompts.INFILL_INSTRUCTION, prompts.COMPLETE_INSTRUCTION, prompts.GAP])
    return {"style": "chat", "templates_sha256": hashlib.sha256(templates.encode()).hexdigest()}


def _version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
