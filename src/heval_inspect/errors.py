"""Errors that are the user's to fix: a bad task argument, a problem or completion file, no Docker.

They derive from Inspect's PrerequisiteError, which `inspect eval` prints as the message alone,
without a traceback (as it does for its own missing prerequisites); each message says what is
wrong and what to do.
"""

from .inspect_internals import PrerequisiteError


class TaskArgumentError(PrerequisiteError, ValueError):
    """A task argument (-T name=value) that is unknown or has an unusable value."""


class DataError(PrerequisiteError):
    """A problem or completion file that is missing, altered or malformed."""


class DockerUnavailableError(PrerequisiteError):
    """No Docker engine answers, and the sandbox needs one."""


class PoolSizeError(PrerequisiteError, ValueError):
    """HEVAL_POOL_SIZE is not a number of containers this machine can hold."""


class EndpointError(PrerequisiteError):
    """A model endpoint that cannot fill the gap as asked: no key or URL, a refused request, a
    model it does not have, or a suffix it refuses or ignores (fim_endpoints.py)."""
