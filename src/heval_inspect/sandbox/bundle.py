"""The executor package (sandbox/executor/) as the one source `python3 -I -c` runs in a container.

Nothing of ours is baked into the sandbox image: each `docker exec` sends the executor as its
command's argument. The package's modules go in compressed behind a short loader that imports
them from memory, under the package name `executor`, and runs its `main`. The loader imports
nothing that the reference's worker has not loaded too (tests/test_reference_world.py), and
once the executor is imported it removes its finder and the package's names from `sys.modules`,
so that a program finds no module of ours.
"""

import base64
import zlib
from pathlib import Path

EXECUTOR_DIR = Path(__file__).parent / "executor"
# Linux refuses a single argument longer than this (MAX_ARG_STRLEN, 32 pages).
ARGUMENT_LIMIT_BYTES = 128 << 10
# Between a module's name and its source, and between modules, in the payload.
SEPARATOR = "\0"

LOADER = '''\
import base64, sys, zlib
from importlib.machinery import ModuleSpec

_parts = zlib.decompress(base64.b64decode({payload!r})).decode().split({separator!r})
_sources = dict(zip(_parts[::2], _parts[1::2]))


class _Executor:
    """Finds and loads the executor's modules from `_sources`."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        package, _, module = name.partition(".")
        if package == "executor" and (module or "__init__") in _sources:
            return ModuleSpec(name, cls, is_package=not module)
        return None

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        name = module.__name__.partition(".")[2] or "__init__"
        code = compile(_sources[name], "<executor/" + name + ".py>", "exec")
        exec(code, module.__dict__)


sys.meta_path.insert(0, _Executor)
import executor.main

sys.meta_path.remove(_Executor)
_main = executor.main
for _name in [name for name in sys.modules if name.partition(".")[0] == "executor"]:
    del sys.modules[_name]
del _parts, _sources, _Executor, executor
_main.main()
'''


def executor_source() -> str:
    """The loader with every module of the executor package, ready for `python3 -I -c`."""
    modules = sorted(EXECUTOR_DIR.glob("*.py"))
    text = SEPARATOR.join(part for path in modules for part in (path.stem, path.read_text()))
    payload = base64.b64encode(zlib.compress(text.encode())).decode()
    source = LOADER.format(payload=payload, separator=SEPARATOR)
    if len(source.encode()) >= ARGUMENT_LIMIT_BYTES:
        raise ValueError(
            f"The executor's source is {len(source.encode())} bytes, over the "
            f"{ARGUMENT_LIMIT_BYTES} Linux allows one command-line argument."
        )
    return source
