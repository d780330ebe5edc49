"""What a log records about the sandbox its verdicts came from: kind, image, executor, limits."""

import asyncio
import hashlib
import os
import re
import sys
from typing import Any

from . import (
    COMPOSE_FILE,
    EXECUTOR_SOURCE,
    FILE_BYTES,
    PROGRAM_TASKS,
    SECCOMP_FILE,
    WALL_CLOCK_FACTOR,
    compose_service,
    sandbox_compose_file,
)

# Compose's "${NAME:-default}": the variable if set and not empty, else the default.
VARIABLE = re.compile(r"\$\{(\w+):-([^}]*)\}")
CONTAINER_LIMITS = ("mem_limit", "memswap_limit", "cpus", "pids_limit", "ulimits", "tmpfs")


def sandbox_provenance(kind: str) -> dict[str, Any]:
    """The sandbox of a run as far as it is known before it starts (the image ids come later)."""
    service = compose_service()
    facts: dict[str, Any] = {
        "kind": kind,
        "executor_sha256": hashlib.sha256(EXECUTOR_SOURCE.encode()).hexdigest(),
    }
    if kind == "local":
        facts["python"] = sys.version.split()[0]
    else:
        compose_files = [COMPOSE_FILE, sandbox_compose_file()]
        facts |= {
            "image": service["image"],
            "image_id": None,
            "base_image": VARIABLE.sub(_value, service["build"]["args"]["BASE_IMAGE"]),
            "runtime": VARIABLE.sub(_value, service["runtime"]),
            "base_image_id": None,
            # compose.yaml's, and under gVisor that of the file that extends it.
            "compose_sha256": hashlib.sha256(
                b"".join(path.read_bytes() for path in dict.fromkeys(compose_files))
            ).hexdigest(),
            "seccomp_sha256": hashlib.sha256(SECCOMP_FILE.read_bytes()).hexdigest(),
        }
    return facts


def limits(kind: str, timeout: float, memory_limit: int) -> dict[str, Any]:
    """Each program's limits, and the container's (which all its programs share)."""
    facts: dict[str, Any] = {
        "timeout_seconds": timeout,
        "wall_clock_backstop_seconds": timeout * WALL_CLOCK_FACTOR,
        "memory_bytes": memory_limit << 20,
        "file_bytes": FILE_BYTES,
        "tasks": PROGRAM_TASKS,
    }
    if kind != "local":
        service = compose_service()
        facts["container"] = {key: service[key] for key in CONTAINER_LIMITS if key in service}
    return facts


async def image_ids(image: str, base_image: str) -> dict[str, str | None]:
    """The ids of the sandbox image and its base, once the sandbox has built them."""
    return {
        "image_id": await _image_id(image),
        "base_image_id": await _image_id(base_image),
    }


async def _image_id(image: str) -> str | None:
    try:
        process = await asyncio.create_subprocess_exec(
            "docker",
            "image",
            "inspect",
            "--format",
            "{{.Id}}",
            image,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        stdout, _ = await process.communicate()
    except OSError:
        return None
    if process.returncode != 0:
        return None
    return stdout.decode().strip() or None


def _value(match: re.Match) -> str:
    return os.environ.get(match.group(1)) or match.group(2)
