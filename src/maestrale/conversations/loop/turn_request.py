"""The engine request of one conversation turn, built straight from the conversation's entries.

A history is long and grows by a few entries a turn: validating it whole as a
ChatCompletionRequest (pydantic) on every append cost more than the rest of the append. So a
turn's request is built in one pass over the messages: a plain text message (the bulk of a
history) is already in the engine's shape and passes the `Message` schema by construction; any
other message (content chunks, tool calls, tool results) is validated by that schema, as the chat
endpoint would; the rules across messages are checked as `validate_chat` checks them, and the
completion arguments are validated by the request schema (without the messages). The outcome —
the engine request, or the 400 and its text — is what the chat endpoint's path (`prepare_chat` on
a validated ChatCompletionRequest) gives for the same messages and arguments;
tests/conversations/test_turn_request.py holds the two side by side. The messages of the entries
an earlier turn converted are reused as it left them (`TurnPrefix`): only the entries added
since are converted and checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from maestrale.completions.execute import engine_chat_request
from maestrale.completions.schemas import ChatCompletionRequest, Message
from maestrale.completions.validation import (
    InvalidRequest,
    check_chunks,
    check_format,
    check_max_tokens,
    engine_messages,
    validate_chat,
)
from maestrale.conversations.entries import append_messages
from maestrale.core.errors import BadRequest
from maestrale.engines.protocols import ChatEngine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.text import content_text
from maestrale.engines.types import ChatRequest
from maestrale.gateway.call import Call
from maestrale.gateway.capabilities import CHAT
from maestrale.gateway.estimates import estimate_tokens
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

# The request's fields in validation order: pydantic reports the first invalid field in it.
FIELD_ORDER = {name: position for position, name in enumerate(ChatCompletionRequest.model_fields)}
# Stands in for the messages when `validate_chat` checks the rest of a request (tools, format,
# max_tokens); it passes every message rule.
PROBE = Message(role="user", content="")


def invalid_args(errors: list[Any]) -> BadRequest:
    """The 400 of a request the schema refuses, naming its first invalid field."""
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return BadRequest(
        f"invalid completion request for the model: {where}: {first.get('msg')}",
        code="invalid_completion_args",
    )


def _rank(errors: list[Any]) -> int:
    loc = errors[0].get("loc", ())
    return FIELD_ORDER.get(str(loc[0]), 0) if loc else 0


def validate_params(body: dict[str, Any]) -> tuple[ChatCompletionRequest | None, list[Any]]:
    """The request without its messages, validated; or the schema's errors."""
    try:
        return ChatCompletionRequest.model_validate({**body, "messages": []}), []
    except ValidationError as exc:
        return None, exc.errors()


def _fail(message: str, param: str) -> InvalidRequest:
    return InvalidRequest(message, param=param)


def _chars(messages: Iterable[dict[str, Any]]) -> int:
    chars = 0
    for message in messages:
        content = message["content"]
        chars += len(content) if type(content) is str else len(content_text(content))
    return chars


@dataclass(frozen=True)
class TurnPrefix:
    """The messages of a conversation's first `count` entries (without instructions), as a turn
    sends them: plain text ones as built, the `special` ones (see `append_messages`) validated
    and in their engine shape; `chars` counts the characters of all. A turn extends the prefix
    it is given with the entries after it (`extend`) and returns the longer one; a prefix is
    never changed once built, so the one a turn built serves the next append (it is kept with
    the history: see `histories`) and only the entries added since are converted and checked.
    """

    count: int = 0
    messages: tuple[dict[str, Any], ...] = ()
    special: tuple[int, ...] = ()
    chars: int = 0
    # The assistant message of the tool executions that end the entries, which the next tool
    # execution joins (see `append_messages`); None when they end otherwise.
    group: int | None = None

    def extend(self, entries: list[dict[str, Any]]) -> tuple[TurnPrefix | None, list[Any]]:
        """This prefix followed by `entries`; or None and the schema errors of the first
        message the `Message` schema refuses (their loc from the prefix's first message)."""
        messages = list(self.messages)
        special = list(self.special)
        fresh, group = append_messages(messages, special, entries, self.group)
        for index in special:
            if index < fresh:
                continue
            try:
                messages[index] = engine_messages([Message.model_validate(messages[index])])[0]
            except ValidationError as exc:
                return None, [{**e, "loc": ("messages", index, *e["loc"])} for e in exc.errors()]
        chars = self.chars - _chars(self.messages[fresh:]) + _chars(messages[fresh:])
        count = self.count + len(entries)
        prefix = TurnPrefix(count, tuple(messages), tuple(special), chars, group)
        return prefix, []


EMPTY = TurnPrefix()


def check_messages(messages: list[dict[str, Any]], special: list[int], spec: ModelSpec) -> None:
    """The rules across messages of `validate_chat`, on engine messages; only the `special`
    ones can break them (a plain text message has content, no prefix, images or tool calls)."""
    if not messages:
        raise _fail("messages must not be empty", "messages")
    call_ids: set[str] = set()
    call_names: set[str] = set()
    last = len(messages) - 1
    for i in special:
        message = messages[i]
        role, content = message["role"], message["content"]
        where = f"messages[{i}]"
        if role in ("system", "user") and content is None:
            raise _fail(f"{where}: a {role} message needs content", f"{where}.content")
        if message.get("prefix") and (role != "assistant" or i != last):
            raise _fail(f"{where}: only the last message, an assistant one, may be a prefix", where)
        if isinstance(content, list):
            check_chunks(content, spec, where)
        if role == "assistant" and message.get("tool_calls"):
            call_ids.update(call["id"] for call in message["tool_calls"])
            call_names.update(call["function"]["name"] for call in message["tool_calls"])
        if role == "tool":
            tool_call_id = message.get("tool_call_id")
            matched = (
                tool_call_id in call_ids
                if tool_call_id is not None
                else message.get("name") in call_names
            )
            if not matched:
                raise _fail(
                    f"{where}: tool message answers no earlier tool call "
                    f"(tool_call_id {tool_call_id!r})",
                    f"{where}.tool_call_id",
                )


@dataclass(frozen=True, slots=True)
class CheckedTurn:
    """A turn's chat call, opened and validated but not admitted: its parameters, its messages
    in engine shape (instructions first), the prefix of all the entries and their characters."""

    call: Call[ChatEngine]
    params: ChatCompletionRequest
    wire: list[dict[str, Any]]
    prefix: TurnPrefix
    chars: int


async def check_turn(
    gateway: Gateway,
    caller: Caller,
    body: dict[str, Any],
    instructions: str | None,
    entries: list[dict[str, Any]],
    *,
    correlation_id: str,
    prefix: TurnPrefix = EMPTY,
    source: str = "api",
    extra: Mapping[str, Any] | None = None,
) -> CheckedTurn:
    """Open and validate the chat call of `body` (a chat request without messages) on the
    messages of `instructions` and `entries` (of which `prefix` holds the first ones): every
    4xx `prepare_chat` would give for the same request with its messages, nothing reserved.
    `source` and `extra` (event fields added to the request's metadata) say where the call
    comes from (a batch line...)."""
    params, param_errors = validate_params(body)
    if param_errors and _rank(param_errors) < FIELD_ORDER["messages"]:
        raise invalid_args(param_errors)
    built, message_errors = prefix.extend(entries[prefix.count :])
    offset = 1 if instructions else 0
    if built is None:
        raise invalid_args(
            [
                {**e, "loc": ("messages", e["loc"][1] + offset, *e["loc"][2:])}
                for e in message_errors
            ]
        )
    if params is None:
        raise invalid_args(param_errors)
    wire = [{"role": "system", "content": instructions}] if instructions else []
    wire += built.messages
    special = [index + offset for index in built.special]
    chars = built.chars + (len(instructions) if instructions else 0)
    call = await gateway.open(
        caller, params.model, CHAT, correlation_id=correlation_id, source=source
    )
    call.extra = {**(params.metadata or {}), **extra} if extra else (params.metadata or {})
    check_messages(wire, special, call.spec)
    validate_chat(params.model_copy(update={"messages": [PROBE]}), call.spec)
    check_format(params, call.engine)
    check_max_tokens(call.spec, params.max_tokens, chars)
    return CheckedTurn(call, params, wire, built, chars)


async def prepare_turn(
    gateway: Gateway,
    caller: Caller,
    body: dict[str, Any],
    instructions: str | None,
    entries: list[dict[str, Any]],
    *,
    correlation_id: str,
    prefix: TurnPrefix = EMPTY,
    source: str = "api",
    extra: Mapping[str, Any] | None = None,
) -> tuple[Call[ChatEngine], ChatRequest, TurnPrefix]:
    """Open, validate (`check_turn`) and admit the chat call of `body` on the messages of
    `instructions` and `entries`; return it with the engine request, as `prepare_chat` would
    for the same request with its messages, and the prefix of all the entries."""
    turn = await check_turn(
        gateway,
        caller,
        body,
        instructions,
        entries,
        correlation_id=correlation_id,
        prefix=prefix,
        source=source,
        extra=extra,
    )
    await gateway.admit(turn.call, estimate_tokens(turn.chars, turn.params.max_tokens))
    return turn.call, engine_chat_request(turn.call, turn.params, turn.wire), turn.prefix
