"""Reading a wire-format conversation: message text, the turn to answer, prompt token counts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from maestrale.engines.builtin.tokens import count_tokens
from maestrale.engines.text import content_text
from maestrale.engines.types import Message


@dataclass(slots=True, frozen=True)
class Turn:
    """The part of the conversation the engine answers.

    Either the text of the last user message (`tool_results` empty), or the trailing run of tool
    messages as (tool name, content) pairs, oldest first.
    """

    text: str
    tool_results: tuple[tuple[str, str], ...] = ()


def _tool_name(messages: list[Message], position: int) -> str:
    message = messages[position]
    name = message.get("name")
    if isinstance(name, str) and name:
        return name
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        # The most recent assistant message that made this call is the one it answers.
        for earlier in reversed(messages[:position]):
            for call in earlier.get("tool_calls") or []:
                if isinstance(call, dict) and call.get("id") == call_id:
                    function = call.get("function")
                    if isinstance(function, dict) and isinstance(function.get("name"), str):
                        return str(function["name"])
    return "unknown"


def turn_to_answer(messages: list[Message]) -> Turn:
    """Find the turn to answer: the last user or tool message (tool results answered together).

    When the conversation ends with several tool messages (results of parallel calls), all of
    them are answered, one line each. A conversation without user or tool message answers "".
    """
    for position in range(len(messages) - 1, -1, -1):
        role = messages[position].get("role")
        if role == "user":
            return Turn(text=content_text(messages[position].get("content")))
        if role == "tool":
            start = position
            while start > 0 and messages[start - 1].get("role") == "tool":
                start -= 1
            results = tuple(
                (_tool_name(messages, i), content_text(messages[i].get("content")))
                for i in range(start, position + 1)
            )
            return Turn(text="", tool_results=results)
    return Turn(text="")


def message_tokens(message: Message) -> int:
    """Prompt tokens of one message: its text, its tool calls' JSON, plus one for the message."""
    tokens = count_tokens(content_text(message.get("content"))) + 1
    calls = message.get("tool_calls")
    if calls:
        tokens += count_tokens(json.dumps(calls))
    return tokens


def prompt_tokens(messages: list[Message]) -> int:
    """Prompt tokens of a conversation (never 0 for a non-empty conversation)."""
    return sum(message_tokens(m) for m in messages)


def offered_tool_names(tools: list[dict[str, Any]] | None, tool_choice: Any) -> frozenset[str]:
    """Names a `/call` may use: the offered function tools, narrowed or emptied by `tool_choice`.

    `"none"` allows no call; a `{"type": "function", "function": {"name": X}}` choice allows only
    X; any other choice (`"auto"`, `"any"`, `"required"`) allows every offered tool.
    """
    if tool_choice == "none" or not tools:
        return frozenset()
    names = frozenset(
        tool["function"]["name"]
        for tool in tools
        if isinstance(tool, dict)
        and tool.get("type", "function") == "function"
        and isinstance(tool.get("function"), dict)
        and isinstance(tool["function"].get("name"), str)
    )
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return names & {function["name"]}
    return names
