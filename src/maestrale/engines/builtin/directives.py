"""Parsing of the builtin engine's directive lines: `/call`, `/respond`, `/sleep` and `/fail`.

A directive is a line that starts with the directive word, followed by whitespace or the end of
the line. A directive that does not parse (unknown tool, invalid JSON, a status outside 400-599,
a negative or non-numeric delay) stays an ordinary line of text, so that a test can always see
what the engine made of its input.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

MAX_SLEEP_MS = 60_000


@dataclass(slots=True, frozen=True)
class ToolCallSpec:
    """A requested tool call: the function name and its arguments as a JSON object string."""

    name: str
    arguments: str


@dataclass(slots=True)
class Directives:
    """What a text asks of the engine, and the text that remains once directive lines are gone."""

    text: str
    calls: list[ToolCallSpec] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    sleep_ms: float = 0.0
    fail_status: int | None = None

    @property
    def response(self) -> str | None:
        """The `/respond` text (several lines joined with newlines), or None if there was none."""
        return "\n".join(self.responses) if self.responses else None


def _directive(line: str, word: str) -> str | None:
    """The argument text of `line` if it is the directive `word`, else None."""
    if not line.startswith(word):
        return None
    rest = line[len(word) :]
    if rest and not rest[0].isspace():
        return None
    return rest


def _parse_call(rest: str, tool_names: Collection[str]) -> ToolCallSpec | None:
    parts = rest.split(maxsplit=1)
    if not parts or parts[0] not in tool_names:
        return None
    name = parts[0]
    raw = parts[1].strip() if len(parts) > 1 else ""
    if not raw:
        return ToolCallSpec(name, "{}")
    try:
        arguments: Any = json.loads(raw)
    except ValueError:
        return None
    # Function arguments are a JSON object on the wire; anything else is not a usable call.
    if not isinstance(arguments, dict):
        return None
    return ToolCallSpec(name, json.dumps(arguments))


def _parse_sleep(rest: str) -> float | None:
    try:
        ms = float(rest.strip())
    except ValueError:
        return None
    if not math.isfinite(ms) or ms < 0:
        return None
    return ms


def _parse_fail(rest: str) -> int | None:
    value = rest.strip()
    if not value.isdigit():
        return None
    status = int(value)
    return status if 400 <= status <= 599 else None


def parse_directives(text: str, tool_names: Collection[str] = ()) -> Directives:
    """Split `text` into directives and the remaining (stripped) text.

    `tool_names` are the tools a `/call` may name; pass an empty collection where no tool call
    is allowed (FIM, `tool_choice="none"`), which turns every `/call` line into text. Several
    `/sleep` lines add up (capped at `MAX_SLEEP_MS`); the first valid `/fail` wins.
    """
    result = Directives(text="")
    kept: list[str] = []
    for line in text.splitlines():
        if (rest := _directive(line, "/respond")) is not None:
            # Everything after the single separating space, kept verbatim.
            result.responses.append(rest[1:] if rest else "")
            continue
        if (rest := _directive(line, "/call")) is not None and (
            call := _parse_call(rest, tool_names)
        ) is not None:
            result.calls.append(call)
            continue
        if (rest := _directive(line, "/sleep")) is not None and (
            ms := _parse_sleep(rest)
        ) is not None:
            result.sleep_ms = min(result.sleep_ms + ms, MAX_SLEEP_MS)
            continue
        if (rest := _directive(line, "/fail")) is not None and (
            status := _parse_fail(rest)
        ) is not None:
            if result.fail_status is None:
                result.fail_status = status
            continue
        kept.append(line)
    result.text = "\n".join(kept).strip()
    return result
