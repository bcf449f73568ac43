"""A conversation turn builds its engine request straight from the entries
(conversations/loop/turn_request.py) instead of validating the whole history as a
ChatCompletionRequest. These tests hold it against the chat endpoint's path (the request schema,
then `prepare_chat`) on the same messages and arguments: the same engine request, or the same
error (status, code, text, param)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from pydantic import ValidationError

from maestrale.completions.execute import prepare_chat
from maestrale.completions.schemas import ChatCompletionRequest
from maestrale.conversations.entries import entry, function_call, message_output, to_messages
from maestrale.conversations.loop.run import chat_params
from maestrale.conversations.loop.turn_request import EMPTY, TurnPrefix, prepare_turn
from maestrale.conversations.targets import Target
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import AppError, BadRequest
from maestrale.gateway.hooks import Caller

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
AUDIO = {"type": "input_audio", "input_audio": "UklGRg=="}


def user(content: Any, **fields: Any) -> dict[str, Any]:
    return entry("message.input", role="user", content=content, prefix=False, **fields)


def prefix(content: str, role: str = "assistant") -> dict[str, Any]:
    return entry("message.input", role=role, content=content, prefix=True)


def answer(content: Any) -> dict[str, Any]:
    return message_output(content, None, "maestrale-echo")


def call(call_id: str, name: str = "get_weather", arguments: str = '{"city": "Rome"}') -> Any:
    return function_call(call_id, name, arguments, None, "maestrale-echo")


def result(call_id: str, text: str = "sunny") -> dict[str, Any]:
    return entry("function.result", tool_call_id=call_id, result=text)


def history(pairs: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for i in range(pairs):
        entries += [user(f"question {i}"), answer(f"echo: question {i}")]
    return entries


ECHO = Target(model="maestrale-echo")
TOOLS = Target(model="maestrale-echo", instructions="Be brief.", tools=[WEATHER])
CASES: list[tuple[str, Target, dict[str, Any] | None, list[dict[str, Any]]]] = [
    ("plain history", ECHO, None, [*history(20), user("last")]),
    (
        "instructions and arguments",
        Target(
            model="maestrale-echo",
            instructions="Be brief.",
            completion_args={"temperature": 0.3, "max_tokens": 50, "stop": "END", "random_seed": 7},
        ),
        {"top_p": 0.5, "presence_penalty": 0.1},
        [*history(3), user("go")],
    ),
    ("assistant prefix last", ECHO, None, [*history(2), user("go"), prefix("Sure,")]),
    ("prefix in the middle", ECHO, None, [user("a"), prefix("Sure,"), answer("x"), user("b")]),
    ("user prefix", ECHO, None, [user("a"), prefix("Sure,", role="user")]),
    ("function round trip", TOOLS, None, [user("weather?"), call("c1"), result("c1"), user("ok")]),
    (
        "two calls in one message",
        TOOLS,
        None,
        [
            user("weather?"),
            call("c1"),
            call("c2"),
            result("c1"),
            result("c2"),
        ],
    ),
    ("result without its call", TOOLS, None, [user("weather?"), result("nope")]),
    ("call with an empty name", TOOLS, None, [user("x"), call("c1", name=""), result("c1")]),
    ("call with a long name", TOOLS, None, [user("x"), call("c1", name="n" * 300), result("c1")]),
    ("result id too long", TOOLS, None, [user("x"), call("i" * 300), result("i" * 300)]),
    ("text chunks", ECHO, None, [user([{"type": "text", "text": "hi"}]), answer("x"), user("y")]),
    ("chunk without text", ECHO, None, [user([{"type": "text"}])]),
    ("chunk type not a string", ECHO, None, [*history(2), user([{"type": 3}])]),
    ("image on a model without vision", ECHO, None, [user([{"type": "text", "text": "a"}, IMAGE])]),
    ("audio on a model without audio", ECHO, None, [user([{"type": "text", "text": "a"}, AUDIO])]),
    ("chunked answer", ECHO, None, [user("a"), answer([{"type": "text", "text": "b"}]), user("c")]),
    (
        "bad temperature",
        Target(
            model="maestrale-echo",
            completion_args={"temperature": 5},
        ),
        None,
        [user("x")],
    ),
    (
        "bad temperature and bad message",
        Target(
            model="maestrale-echo",
            completion_args={"temperature": 5},
        ),
        None,
        [user([{"type": "text"}])],
    ),
    ("bad penalty after a bad message", ECHO, {"frequency_penalty": 9}, [user([{"type": 1}])]),
    ("bad penalty", ECHO, {"frequency_penalty": 9}, [user("x")]),
    ("max_tokens over the context", ECHO, {"max_tokens": 10**6}, [user("x")]),
    ("prompt over the context", ECHO, {"max_tokens": 32000}, [user("y" * 4000)]),
    ("tool choice any", TOOLS, {"tool_choice": "any"}, [user("x")]),
    ("tool choice any without tools", ECHO, {"tool_choice": "any"}, [user("x")]),
    (
        "named tool choice",
        TOOLS,
        {
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        },
        [user("x")],
    ),
    (
        "named tool choice not offered",
        TOOLS,
        {
            "tool_choice": {"type": "function", "function": {"name": "other"}},
        },
        [user("x")],
    ),
    (
        "json schema format",
        ECHO,
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "s", "schema": {"type": "object"}},
            }
        },
        [user("x")],
    ),
    (
        "json schema format without a schema",
        ECHO,
        {"response_format": {"type": "json_schema"}},
        [user("x")],
    ),
    (
        "handoffs offered",
        Target(
            model="maestrale-echo",
            agent_id="ag_1",
            handoffs=["ag_2"],
        ),
        None,
        [user("x")],
    ),
    ("unknown model", Target(model="no-such-model"), None, [user("x")]),
    (
        "unknown model and a bad message",
        Target(model="no-such-model"),
        None,
        [user([{"type": "text"}])],
    ),
    ("no messages", ECHO, None, []),
]


each_case = pytest.mark.parametrize(
    ("case", "target", "override", "entries"), CASES, ids=[case[0] for case in CASES]
)


async def chat_endpoint_path(
    app: FastAPI, caller: Caller, target: Target, override: Any, entries: Any
) -> Any:
    """What the chat endpoint's path makes of the turn: the request schema on the whole body
    (as turns were built before), then `prepare_chat`."""
    messages = to_messages(target.instructions, entries)
    body = {**chat_params(target, override), "messages": messages}
    try:
        try:
            request = ChatCompletionRequest.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise BadRequest(
                f"invalid completion request for the model: {where}: {first.get('msg')}",
                code="invalid_completion_args",
            ) from exc
        _, engine_request = await prepare_chat(
            app.state.services.gateway, caller, request, correlation_id="conv_x"
        )
    except AppError as exc:
        return ("error", exc.status_code, exc.code, exc.message, exc.param)
    return engine_request


async def turn_path(
    app: FastAPI,
    caller: Caller,
    target: Target,
    override: Any,
    entries: Any,
    prefix: TurnPrefix = EMPTY,
) -> Any:
    try:
        _, engine_request, _ = await prepare_turn(
            app.state.services.gateway,
            caller,
            chat_params(target, override),
            target.instructions,
            entries,
            correlation_id="conv_x",
            prefix=prefix,
        )
    except AppError as exc:
        return ("error", exc.status_code, exc.code, exc.message, exc.param)
    return engine_request


@each_case
async def test_turn_request_is_the_chat_endpoints(
    app: FastAPI,
    tenant: Tenant,
    case: str,
    target: Target,
    override: dict[str, Any] | None,
    entries: list[dict[str, Any]],
) -> None:
    caller = Caller(tenant.organization_id, tenant.workspace_id)
    expected = await chat_endpoint_path(app, caller, target, override, entries)
    got = await turn_path(app, caller, target, override, entries)
    assert got == expected, case


@each_case
async def test_a_turn_on_a_prefix_is_the_turn_on_all_entries(
    app: FastAPI,
    tenant: Tenant,
    case: str,
    target: Target,
    override: dict[str, Any] | None,
    entries: list[dict[str, Any]],
) -> None:
    """A turn given the prefix an earlier turn built from the first entries (as an append gets
    it from `histories`) makes the same request, or the same error, as one built from all the
    entries; and the prefix it returns serves the next turn, unchanged by this one."""
    caller = Caller(tenant.organization_id, tenant.workspace_id)
    expected = await turn_path(app, caller, target, override, entries)
    for split in range(len(entries) + 1):
        prefix, errors = EMPTY.extend(entries[:split])
        if prefix is None:  # no turn could have built it: an earlier entry is refused
            assert errors
            continue
        kept = (prefix.messages, [dict(m) for m in prefix.messages])
        assert await turn_path(app, caller, target, override, entries, prefix) == expected
        assert prefix.messages is kept[0] and list(prefix.messages) == kept[1], split


async def test_the_prefix_a_turn_returns_covers_its_entries(app: FastAPI, tenant: Tenant) -> None:
    caller = Caller(tenant.organization_id, tenant.workspace_id)
    entries = [user("weather?"), call("c1"), result("c1"), user("ok")]
    body = chat_params(TOOLS, None)
    _, first, prefix = await prepare_turn(
        app.state.services.gateway,
        caller,
        body,
        TOOLS.instructions,
        entries[:2],
        correlation_id="c",
    )
    assert prefix.count == 2 and list(prefix.messages) == first.messages[1:]
    more = [*entries[:2], call("c2"), *entries[2:]]  # joins the assistant message of c1
    _, second, longer = await prepare_turn(
        app.state.services.gateway,
        caller,
        body,
        TOOLS.instructions,
        more,
        correlation_id="c",
        prefix=prefix,
    )
    assert [c["id"] for c in second.messages[2]["tool_calls"]] == ["c1", "c2"]
    assert [c["id"] for c in prefix.messages[1]["tool_calls"]] == ["c1"]  # left as it was
    assert longer.count == 5 and longer.chars == sum(len(m["content"]) for m in longer.messages)


async def test_cases_cover_both_outcomes(app: FastAPI, tenant: Tenant) -> None:
    """The cases above are not all errors (nor all successes): both kinds are compared."""
    caller = Caller(tenant.organization_id, tenant.workspace_id)
    outcomes = [await turn_path(app, caller, *case[1:]) for case in CASES]
    errors = [o for o in outcomes if isinstance(o, tuple)]
    assert 10 <= len(errors) <= len(CASES) - 10
    assert {e[2] for e in errors} >= {"invalid_completion_args", "invalid_request"}


async def test_turn_leaves_the_stored_entries_as_they_were(app: FastAPI, tenant: Tenant) -> None:
    """Messages are built from the entries without changing them (they are stored after)."""
    caller = Caller(tenant.organization_id, tenant.workspace_id)
    entries = [user([{"type": "text", "text": "a"}]), call("c1"), call("c2"), result("c1")]
    before = [dict(e) for e in entries]
    request = await turn_path(app, caller, TOOLS, None, entries)
    assert not isinstance(request, tuple), request
    assert entries == before
    assert request.messages[2]["tool_calls"][1]["id"] == "c2"
