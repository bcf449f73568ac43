"""The suite runs a database test on SQLite only, unless it is marked `both_databases` (see
tests/conftest.py): every repository module must be named by such a marker, so that its SQL runs
on Postgres too, and every name must be a module that exists."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from tests.support.databases import BOTH

ROOT = Path(__file__).resolve().parents[2]


def repository_modules() -> set[str]:
    src = ROOT / "src"
    return {
        ".".join(path.relative_to(src).with_suffix("").parts)
        for path in src.rglob("*repository.py")
    }


def named_by_markers() -> dict[str, list[str]]:
    """Each module named by a `both_databases(...)` marker, with the test files that name it."""
    named: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == BOTH
            ):
                for arg in node.args:
                    assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), (
                        f"{path}: {BOTH} takes module names"
                    )
                    named.setdefault(arg.value, []).append(str(path.relative_to(ROOT)))
    return named


def test_every_repository_module_has_tests_on_both_databases() -> None:
    named = named_by_markers()
    missing = sorted(repository_modules() - set(named))
    assert not missing, f"no test marked {BOTH}(...) names these modules: {missing}"


def test_the_markers_name_modules_that_exist() -> None:
    unknown = {
        name: files
        for name, files in named_by_markers().items()
        if importlib.util.find_spec(name) is None
    }
    assert not unknown, unknown
