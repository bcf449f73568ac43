"""Tool calls that wait for the user's confirmation, and the `tool_confirmations` of an append.

A call of a server tool that `requires_confirmation` is not run: the run stops with a
`function.call` entry whose `confirmation_status` is "pending". It stays pending until a
tool.execution entry answers it (its `info.tool_call_id`); while calls are pending, the next
append must answer each of them (allow: the tool runs; deny: it does not, and the model is told),
inputs may come along. The pending entry's status is then set to "allowed" or "denied", in the
transaction that stores the append.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from maestrale.conversations.loop.tool_calls import ServerCall, find_tool
from maestrale.conversations.schemas import ToolCallConfirmation
from maestrale.conversations.server_tools import ServerToolbox
from maestrale.core.errors import BadRequest

STATUSES = {"allow": "allowed", "deny": "denied"}


class ToolCallNotPending(BadRequest):
    code = "tool_call_not_pending"


class ToolConfirmationRequired(BadRequest):
    code = "tool_confirmation_required"


class DuplicateConfirmation(BadRequest):
    code = "duplicate_tool_confirmation"


def pending_calls(entries: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The function.call entries waiting for a confirmation, by tool call id, in order."""
    pending: dict[str, dict[str, Any]] = {}
    for item in entries:
        kind = item["type"]
        if kind == "function.call" and item.get("confirmation_status") == "pending":
            pending[item["tool_call_id"]] = item
        elif kind == "tool.execution":
            pending.pop(str((item.get("info") or {}).get("tool_call_id")), None)
    return pending


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(repr(i) for i in ids)


def resolve(
    history: Sequence[dict[str, Any]],
    confirmations: Sequence[ToolCallConfirmation],
    toolbox: ServerToolbox,
) -> list[ServerCall]:
    """The calls `confirmations` answer, in call order, to run (or record as denied) with
    `toolbox` (the conversation's tools now: a tool gone since gives an entry with an error).
    400 when one names no pending call, names one twice, or leaves a pending call unanswered."""
    pending = pending_calls(history)
    answers: dict[str, str] = {}
    for confirmation in confirmations:
        call_id = confirmation.tool_call_id
        if call_id in answers:
            raise DuplicateConfirmation(
                f"tool call {call_id!r} is confirmed more than once", param="tool_confirmations"
            )
        if call_id not in pending:
            raise ToolCallNotPending(
                f"no tool call {call_id!r} awaits confirmation in this conversation",
                param="tool_confirmations",
            )
        answers[call_id] = STATUSES[confirmation.confirmation]
    missing = [call_id for call_id in pending if call_id not in answers]
    if missing:
        raise ToolConfirmationRequired(
            f"tool calls await confirmation: {_ids(missing)}; answer each of them in "
            "`tool_confirmations` (allow or deny)",
            param="tool_confirmations",
        )
    return [
        ServerCall(
            call_id,
            item["name"],
            item["arguments"],
            find_tool(toolbox, item["name"]),
            item.get("agent_id"),
            item.get("model") or "",
            answers[call_id],
        )
        for call_id, item in pending.items()
    ]


def refuse_pending(history: Sequence[dict[str, Any]], from_entry_id: str) -> None:
    """A restart cannot answer confirmations: refuse one whose entries end with pending calls."""
    pending = pending_calls(history)
    if pending:
        raise ToolConfirmationRequired(
            f"the entries up to {from_entry_id!r} hold tool calls awaiting confirmation "
            f"({_ids(list(pending))}): restart from another entry, or append the confirmations "
            "to the conversation",
            param="from_entry_id",
        )


def answered(
    history: Sequence[dict[str, Any]], calls: Sequence[ServerCall]
) -> dict[int, dict[str, Any]]:
    """The pending function.call entries of `history` that `calls` answer, by position, as they
    become: with the confirmation status given (copies: entries are shared, never changed)."""
    pending = pending_calls(history)
    waiting = {id(pending[c.call_id]): c.confirmation for c in calls if c.call_id in pending}
    return {
        position: {**item, "confirmation_status": waiting[id(item)]}
        for position, item in enumerate(history)
        if id(item) in waiting
    }
