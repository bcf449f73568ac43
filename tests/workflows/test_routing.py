"""The workflows group's routes in matching order (issue 32): every route is the first to match
its own URLs, whatever order the sub-routers are listed in."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match

from maestrale.workflows.registry.router import router as registry_router
from maestrale.workflows.router import SUB_ROUTERS, router
from maestrale.workflows.routing import assemble
from maestrale.workflows.runs.router import router as runs_router


def _api_routes(routes: Sequence[BaseRoute]) -> list[APIRoute]:
    return [route for route in routes if isinstance(route, APIRoute)]


def _first_match(routes: list[APIRoute], path: str, method: str) -> APIRoute | None:
    scope = {"type": "http", "path": path, "root_path": "", "method": method}
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
    return None


def _sample(path: str) -> str:
    """A URL of `path`, its parameters filled with a value that no fixed segment has."""
    return re.sub(r"\{[^}]+\}", "some-id", path)


def _order(group: APIRouter) -> list[tuple[str, frozenset[str]]]:
    return [(route.path, frozenset(route.methods or ())) for route in _api_routes(group.routes)]


def test_each_route_matches_its_own_urls_first() -> None:
    routes = _api_routes(router.routes)
    assert len(routes) >= 40
    for route in routes:
        for method in route.methods or ():
            found = _first_match(routes, _sample(route.path), method)
            assert found is route, (
                f"{method} {route.path} is taken by {found.path if found else None}"
            )


def test_the_order_does_not_depend_on_the_listing() -> None:
    expected = _order(router)
    assert _order(assemble(*reversed(SUB_ROUTERS))) == expected
    shuffled = list(SUB_ROUTERS)
    random.Random(32).shuffle(shuffled)
    assert _order(assemble(*shuffled)) == expected


def test_a_parameter_listed_first_would_take_fixed_paths() -> None:
    """Why the group is ordered: Starlette takes the first route that matches."""
    plain = APIRouter(routes=[*registry_router.routes, *runs_router.routes])
    found = _first_match(_api_routes(plain.routes), "/workflows/runs", "GET")
    assert found is not None
    assert found.path == "/workflows/{workflow_identifier}"
    found = _first_match(_api_routes(router.routes), "/workflows/runs", "GET")
    assert found is not None
    assert found.path == "/workflows/runs"
