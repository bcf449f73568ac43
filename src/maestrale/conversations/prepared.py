"""A conversation request prepared to run (`Prepared`): checked, with its target, its history
and the entries it adds; and the small rules of building one (ids, copies of entries)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from maestrale.conversations.loop.run import TurnsResult
from maestrale.conversations.loop.tool_calls import ServerCall
from maestrale.conversations.loop.turn_request import EMPTY, TurnPrefix
from maestrale.conversations.schemas import ToolCallConfirmation
from maestrale.conversations.tables import Conversation
from maestrale.conversations.targets import Target
from maestrale.core.ids import new_id


def new_conversation_id() -> str:
    return "conv_" + new_id().replace("-", "")


def copied(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries copied into another conversation: the same, under new ids."""
    return [
        {**item, "id": f"{item['id'].split('_', 1)[0]}_{new_id().replace('-', '')}"}
        for item in entries
    ]


def guardrail_key(config: dict[str, Any]) -> str:
    return orjson.dumps(config, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(slots=True)
class Prepared:
    """A conversation request checked and ready to run: everything that can refuse it with a 4xx
    was checked (its guardrails too), so that a streamed request is refused before its stream
    opens, the same way as a plain one. Built by `ConversationService.prepare_*`, run by
    `ConversationService.execute` (in another unit of work, for a stream)."""

    conversation_id: str
    target: Target
    history: list[dict[str, Any]]  # the entries before the request's (as read when prepared)
    added: list[dict[str, Any]]  # the entries the request adds
    override: dict[str, Any] | None
    handoff_execution: str
    prefix: TurnPrefix = EMPTY  # the turn messages of `history` (of history + added once ready)
    create: Conversation | None = None  # the conversation a start or restart stores
    append: bool = False  # an append that stores: it runs holding the conversation's turn
    guarded: list[dict[str, Any]] | None = None  # the results of the guardrails checked so far
    checked: set[str] = field(default_factory=set)  # their configurations
    # An append's answers to the tool calls awaiting confirmation, and the calls they answer
    # (resolved against `history`; again against the history read under the turn if it moved).
    confirmations: list[ToolCallConfirmation] = field(default_factory=list)
    confirmed: list[ServerCall] = field(default_factory=list)
    # An append that must run on exactly `history` (a response continuing the one before it):
    # another append stored meanwhile refuses it (409) instead of answering after it.
    exact: bool = False
    # Where the request's first entry was stored (its position in the conversation), once it is,
    # and why its last model turn stopped, once it ran.
    first_seq: int | None = None
    finish_reason: str = "stop"
    # How many server tool calls the run may make (a response's `max_tool_calls`), if bounded.
    max_tool_calls: int | None = None
    # What else to write with the run's entries, in their transaction (a stored response's row).
    on_store: Callable[[TurnsResult], Awaitable[None]] | None = None
    # Set to end the model's answer where it is (a voice session's barge-in): the text streamed
    # so far is the turn's message, stored as any other, and no tool call of it runs.
    stop: asyncio.Event | None = None
