"""Errors that are the user's to fix: a bad task argument, a problem or completion file, no Docker.

They derive from Inspect's PrerequisiteError, which `inspect eval` prints as the message alone,
without a traceback (as it does for its own missing prerequisites); each message says what is
wrong and what to do.
"""

import difflib
from collections.abc import Iterable

from .inspect_internals import PrerequisiteError


def did_you_mean(given: object, names: Iterable[str]) -> str:
    """The hint for a misspelt name, ' (did you mean NAME?)' with the closest of `names`, or ''
    when none is close."""
    close = difflib.get_close_matches(str(given), list(names), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


class TaskArgumentError(PrerequisiteError, ValueError):
    """A task argument (-T name=value) that is unknown or has an unusable value."""


class DataError(PrerequisiteError):
    """A problem or completion file that is missing, altered or malformed."""


class DockerUnavailableError(PrerequisiteError):
    """No Docker engine answers, and the sandbox needs one."""


class SandboxStartError(PrerequisiteError):
    """Docker answers, but the sandbox's image cannot be built or its containers cannot start
    (a base image it cannot pull, a runtime it does not know, ...)."""


class PoolSizeError(PrerequisiteError, ValueError):
    """HEVAL_POOL_SIZE is not a number of containers this machine can hold."""


class Interrupted(Exception):
    """The user stopped a command (Ctrl-C): not an error to fix, so not a PrerequisiteError. The
    message says what was kept and how to go on."""


class NoModelError(PrerequisiteError):
    """The run has no model (--model none), and its solver asks one."""


class EndpointError(PrerequisiteError):
    """A model endpoint that cannot fill the gap as asked: no key or URL, a refused request, a
    model it does not have, or a suffix it refuses or ignores (fim_endpoints.py)."""
