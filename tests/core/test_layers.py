"""The package graph of src/maestrale has no loop: no two top-level packages import each other,
directly or through others, at module level or in a function (imports under `TYPE_CHECKING` do
not count). `lint-imports` (in `make lint`) checks the declared layers of pyproject.toml; this
test fails on any loop, whatever the layers say, and names the imports that close it."""

from __future__ import annotations

from collections import defaultdict

import grimp
import pytest

# Loops the design allows, each with its reason: (package, package) -> why. None today.
ALLOWED: dict[tuple[str, str], str] = {}


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@pytest.fixture(scope="module")
def package_imports() -> dict[tuple[str, str], list[str]]:
    """The imports between top-level packages: (importer, imported) -> 'a.b -> c.d' lines."""
    graph = grimp.build_graph("maestrale", exclude_type_checking_imports=True, cache_dir=None)
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            pair = (top(module), top(imported))
            if pair[0] != pair[1] and "maestrale" not in pair:
                edges[pair].append(f"{module} -> {imported}")
    return edges


def loops(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan), each sorted."""
    following: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(edges):
        following[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in following[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted({n for edge in edges for n in edge}):
        if node not in index:
            visit(node)
    return groups


def test_loops_finds_a_loop() -> None:
    assert loops({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert loops({("a", "b"), ("b", "c")}) == []


def test_no_two_packages_import_each_other(
    package_imports: dict[tuple[str, str], list[str]],
) -> None:
    mutual = sorted(
        (a, b)
        for a, b in package_imports
        if a < b and (b, a) in package_imports and (a, b) not in ALLOWED
    )
    assert not mutual, "\n".join(
        f"{a} <-> {b}: {package_imports[(a, b)][:3]} / {package_imports[(b, a)][:3]}"
        for a, b in mutual
    )


def test_the_package_graph_has_no_loop(
    package_imports: dict[tuple[str, str], list[str]],
) -> None:
    edges = {pair for pair in package_imports if pair not in ALLOWED}
    assert loops(edges) == []
