"""The docker command line, as the pool sandbox calls it: one command's exit code and output,
what went wrong in a line, and whether this machine has an engine to run the sandbox on."""

import asyncio
import contextlib
import shutil

from ..errors import DockerUnavailableError


async def docker(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    """`docker ARGS...` run to its end: its exit code, stdout and stderr (`input`: its stdin).

    Cancelled (Ctrl-C), it ends the command and waits for it before it lets the cancellation
    go on: a `docker compose up` that outlived its caller could make a container after the
    caller's cleanup (`compose down`) had run, and leave it behind."""
    process = await asyncio.create_subprocess_exec(
        "docker",
        *args,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await process.communicate(input)
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        await asyncio.shield(process.wait())
        raise
    returncode = await process.wait()  # it has ended: its code, typed as one (never None)
    return returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace")


def last_line(output: str) -> str:
    """What docker says went wrong: the last line of its stderr (the lines before are its
    progress)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "it said nothing"


async def check_docker() -> int | None:
    """Before any sample runs (so before any model is called): is there an engine to run on?
    Its machine's memory, in bytes."""
    if shutil.which("docker") is None:
        raise DockerUnavailableError(
            "Docker is not installed, and the sandbox runs every program in a Docker container: "
            "install Docker Engine 24 or newer with the compose v2 plugin "
            "(https://docs.docker.com/engine/install/), then run the eval again."
        )
    code, memory, error = await docker("info", "--format", "{{.MemTotal}}")
    if code != 0:
        raise DockerUnavailableError(
            "Docker is not running, and the sandbox runs every program in a Docker container: "
            "start the engine (e.g. `sudo systemctl start docker`, or Docker Desktop) until "
            f"`docker info` works, then run the eval again. docker said: {error.strip()}"
        )
    code, _, _ = await docker("compose", "version")
    if code != 0:
        raise DockerUnavailableError(
            "The docker compose v2 plugin is missing (`docker compose version` fails): install "
            "it (https://docs.docker.com/compose/install/), then run the eval again."
        )
    return int(memory) if memory.strip().isdigit() else None
