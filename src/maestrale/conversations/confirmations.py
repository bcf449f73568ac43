"""`tool_confirmations` of an append. Only built-in and connector tools can wait for a
confirmation, and this server runs none of them (function tools are run by the client), so no
tool call is ever pending one: any confirmation is refused, naming its tool call."""

from __future__ import annotations

from collections.abc import Sequence

from maestrale.conversations.schemas import ToolCallConfirmation
from maestrale.core.errors import BadRequest


class ToolCallNotPending(BadRequest):
    code = "tool_call_not_pending"


def refuse_confirmations(confirmations: Sequence[ToolCallConfirmation] | None) -> None:
    if not confirmations:
        return
    ids = ", ".join(repr(c.tool_call_id) for c in confirmations)
    raise ToolCallNotPending(
        f"no tool call awaits confirmation: {ids}. Only built-in and connector tools ask for "
        "one, and this server runs none; answer a function.call with a function.result entry",
        param="tool_confirmations",
    )
