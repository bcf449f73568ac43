"""What a caller may do with a connector's tools: the merge of the levels that apply to it (the
organization, its workspace, itself) and of the request's own tool configuration.

- Active: a connector is usable unless one of the caller's levels switched it off (an
  organization's deactivation cannot be undone by a user's activation).
- `include`: each level can only narrow (the intersection of the lists given); `exclude`: the
  union.
- Confirmation: a tool asks for one when any level or the request lists it in
  `requires_confirmation`, or when its server annotates it destructive (`destructiveHint`) and no
  level lists it in `skip_confirmation`. A list is tool names, or `{"read_only": bool}` for the
  tools whose `readOnlyHint` says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Selector = list[str] | dict[str, Any]


def _matches(selector: Selector | None, tool: Mapping[str, Any]) -> bool:
    if selector is None:
        return False
    if isinstance(selector, list):
        return tool.get("name") in selector
    hints = tool.get("annotations") or {}
    wanted = selector.get("read_only")
    return wanted is not None and bool(hints.get("readOnlyHint")) == bool(wanted)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    active: bool = True
    include: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    requires: tuple[Selector, ...] = ()
    skips: tuple[Selector, ...] = ()
    # The levels that configured the connector (for `connection_preferences`).
    levels: tuple[tuple[str, dict[str, Any]], ...] = field(default=())
    # The levels that switched it off (for `blocked_by`).
    blocked_by: tuple[str, ...] = ()

    def allows(self, name: str) -> bool:
        if name in self.exclude:
            return False
        return self.include is None or name in self.include

    def needs_confirmation(self, tool: Mapping[str, Any]) -> bool:
        if any(_matches(s, tool) for s in self.requires):
            return True
        hints = tool.get("annotations") or {}
        destructive = hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True
        return destructive and not any(_matches(s, tool) for s in self.skips)


def merge(
    levels: Iterable[tuple[str, bool, Mapping[str, Any]]], request: Mapping[str, Any] | None = None
) -> ToolPolicy:
    """The policy of `levels` (scope, active, config; least specific first) and of a request's
    `tool_configuration` (include, exclude, requires_confirmation)."""
    active = True
    include: frozenset[str] | None = None
    exclude: set[str] = set()
    requires: list[Selector] = []
    skips: list[Selector] = []
    configured: list[tuple[str, dict[str, Any]]] = []
    blocked_by: list[str] = []
    for scope, on, config in [*levels, ("request", True, request or {})]:
        if not on:
            active = False
            blocked_by.append(scope)
            continue
        if scope != "request":
            configured.append((scope, dict(config)))
        if config.get("include") is not None:
            names = frozenset(config["include"])
            include = names if include is None else include & names
        exclude.update(config.get("exclude") or ())
        if config.get("requires_confirmation") is not None:
            requires.append(config["requires_confirmation"])
        if config.get("skip_confirmation") is not None:
            skips.append(config["skip_confirmation"])
    return ToolPolicy(
        active,
        include,
        frozenset(exclude),
        tuple(requires),
        tuple(skips),
        tuple(configured),
        tuple(blocked_by),
    )
