"""The executor package reaches a container as one `python3 -I -c` source (sandbox/bundle.py):
it fits one argument, runs, leaves no module of ours for a program to find, and its modules keep
the order its `__init__` states (each imports only those above it, and only the standard
library)."""

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from heval_inspect.sandbox import EXECUTOR_SOURCE, bundle
from heval_inspect.sandbox.bundle import ARGUMENT_LIMIT_BYTES, EXECUTOR_DIR, executor_source

MODULE_LINES = 400


def answer(program: str) -> dict:
    """The executor's answer to `program`, run as `-T sandbox=local` runs it."""
    request = {"program": program, "seconds": 3, "wall_seconds": 30,
               "memory_bytes": 1 << 30, "file_bytes": 1 << 20, "tasks": 64}  # fmt: skip
    ran = subprocess.run(
        [sys.executable, "-I", "-c", EXECUTOR_SOURCE, "local"],
        input=json.dumps(request), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def stated_order() -> list[str]:
    """The modules as the package's docstring lists them, top to bottom."""
    doc = ast.get_docstring(ast.parse((EXECUTOR_DIR / "__init__.py").read_text())) or ""
    listing = doc.split("each importing only those above it", 1)[1]
    return re.findall(r"^    ([a-z]+)   ", listing, re.MULTILINE)


def test_the_source_fits_one_argument_and_runs_a_program():
    assert len(EXECUTOR_SOURCE.encode()) < ARGUMENT_LIMIT_BYTES
    assert answer("assert sum([1, 2]) == 3")["status"] == "passed"
    assert answer("assert sum([1, 2]) == 4")["cause"] == "wrong answer"


def test_a_program_finds_no_module_nor_finder_of_the_executor():
    program = (
        "import sys\n"
        "ours = [name for name in sys.modules if name.partition('.')[0] == 'executor']\n"
        "finders = [type(f).__name__ + getattr(f, '__name__', '') for f in sys.meta_path]\n"
        "assert not ours, ours\n"
        "assert not any('Executor' in finder for finder in finders), finders\n"
        "try:\n    import executor\nexcept ImportError:\n    pass\n"
        "else:\n    raise AssertionError('executor imported')\n"
    )
    verdict = answer(program)
    assert verdict["status"] == "passed", verdict


def test_each_module_imports_only_the_standard_library_and_the_modules_above_it():
    order = stated_order()
    files = sorted(path.stem for path in EXECUTOR_DIR.glob("*.py") if path.stem != "__init__")
    assert sorted(order) == files, "the docstring's list is the package's modules"
    for position, name in enumerate(order):
        tree = ast.parse((EXECUTOR_DIR / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                imported = [node.module] if node.module else [a.name for a in node.names]
                for module in imported:
                    assert module in order[:position], f"{name} imports {module}, not above it"
            elif isinstance(node, ast.Import | ast.ImportFrom):
                modules = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                for module in modules:
                    top = module.partition(".")[0]
                    assert top in sys.stdlib_module_names, f"{name} imports {module}"


def test_no_module_is_over_the_packages_size():
    lengths = {path.name: len(path.read_text().splitlines()) for path in EXECUTOR_DIR.glob("*.py")}
    assert max(lengths.values()) <= MODULE_LINES, lengths


def test_a_source_too_long_for_one_argument_is_refused(tmp_path, monkeypatch):
    for path in EXECUTOR_DIR.glob("*.py"):
        (tmp_path / path.name).write_text(path.read_text())
    # Incompressible: the payload is compressed before it is measured.
    (tmp_path / "padding.py").write_text(f"PADDING = {os.urandom(ARGUMENT_LIMIT_BYTES).hex()!r}\n")
    monkeypatch.setattr(bundle, "EXECUTOR_DIR", tmp_path)
    with pytest.raises(ValueError, match="one command-line argument"):
        executor_source()
