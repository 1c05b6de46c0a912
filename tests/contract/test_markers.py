"""The tiers hold by their markers: a test whose own code starts a process (subprocess, a fork,
multiprocessing) is marked `subprocess`, itself or by its module's `pytestmark`, so that
`-m "not subprocess"` leaves it out. Checked on the source of every test module; a process
started inside a helper or a fixture is the helper's to mark."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# Calls that start a process, as written in a test's own body.
STARTERS = {
    ("subprocess", "run"),
    ("subprocess", "Popen"),
    ("subprocess", "check_call"),
    ("subprocess", "check_output"),
    ("os", "fork"),
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
}


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The names of the pytest marks in `decorators` (or in a `pytestmark` value)."""
    found = set()
    for node in decorators:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
                found.add(sub.attr)
    return found


def _starts_a_process(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in STARTERS:
                return True
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "multiprocessing":
            return True
    return False


def _unmarked(path: Path, root: Path = TESTS.parent) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            module_marks |= _marks([node.value])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
            if _starts_a_process(node) and "subprocess" not in module_marks | _marks(node.decorator_list):
                found.append(f"{path.relative_to(root)}::{node.name}")
    return found


def test_a_test_that_starts_a_process_is_marked_subprocess() -> None:
    modules = sorted(TESTS.rglob("test_*.py"))
    assert len(modules) > 100
    assert [name for path in modules for name in _unmarked(path)] == []


def test_the_check_finds_a_process_started_by_an_unmarked_test(tmp_path: Path) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(
        "import subprocess, sys, pytest\n"
        "def test_plain():\n    subprocess.run([sys.executable, '-V'])\n"
        "@pytest.mark.subprocess\ndef test_marked():\n    subprocess.run([sys.executable, '-V'])\n",
        encoding="utf-8",
    )
    assert _unmarked(module, tmp_path) == ["test_sample.py::test_plain"]
