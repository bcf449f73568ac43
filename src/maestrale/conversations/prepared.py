"""A conversation request checked and ready to run (`Prepared`), between the service's
`prepare_*` and its `execute`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from maestrale.conversations import runtime
from maestrale.conversations.schemas import ToolCallConfirmation
from maestrale.conversations.tables import Conversation
from maestrale.conversations.tool_runs import ServerCall
from maestrale.conversations.turn import EMPTY, TurnPrefix


@dataclass(slots=True)
class Prepared:
    """A conversation request checked and ready to run: everything that can refuse it with a 4xx
    was checked (its guardrails too), so that a streamed request is refused before its stream
    opens, the same way as a plain one. Built by `ConversationService.prepare_*`, run by
    `ConversationService.execute` (in another unit of work, for a stream)."""

    conversation_id: str
    target: runtime.Target
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
