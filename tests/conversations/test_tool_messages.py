"""The messages a model reads of server tool calls: a tool.execution entry is an assistant tool
call and its tool result (the tool executions of one turn share the assistant message); a call
waiting for (or given) a confirmation is no message; built whole or a few entries at a time
(`TurnPrefix`), the messages are the same."""

from __future__ import annotations

from typing import Any

import pytest

from maestrale.conversations.entries import (
    DENIED,
    InvalidInputs,
    check_results,
    entry,
    entry_id,
    function_call,
    message_output,
    now_text,
    parse_inputs,
    to_messages,
    tool_execution,
)
from maestrale.conversations.loop.confirmations import answered, pending_calls
from maestrale.conversations.loop.tool_calls import ServerCall
from maestrale.conversations.loop.turn_request import EMPTY, TurnPrefix


def execution(call_id: str, name: str, **info: Any) -> dict[str, Any]:
    return tool_execution(
        entry_id("tool.execution"),
        name,
        "{}",
        None,
        "maestrale-echo",
        created_at=now_text(),
        info={"tool_call_id": call_id, "output": f"{name} out", "error": None, **info},
    )


def result(call_id: str, text: str) -> dict[str, Any]:
    return entry("function.result", tool_call_id=call_id, result=text)


def user(text: str) -> dict[str, Any]:
    return parse_inputs(text)[0]


def tool_call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


ENTRIES = [
    user("go"),
    execution("a", "first"),  # two calls of one turn the server ran,
    execution("b", "second"),
    function_call("p", "guarded", "{}", None, "m", "pending"),  # one waiting,
    function_call("c", "client", "{}", None, "m"),  # and one for the client
    execution("p", "guarded", confirmation="allowed"),  # the next append: confirmed,
    result("c", "client out"),  # and the client's result
    message_output("done", None, "m"),
    execution("d", "later", error="boom"),
    execution("e", "denied", confirmation="denied"),
    user("x"),
]
EXPECTED = [
    {"role": "user", "content": "go"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [tool_call("a", "first"), tool_call("b", "second")],
    },
    {"role": "tool", "tool_call_id": "a", "content": "first out"},
    {"role": "tool", "tool_call_id": "b", "content": "second out"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [tool_call("c", "client"), tool_call("p", "guarded")],
    },
    {"role": "tool", "tool_call_id": "p", "content": "guarded out"},
    {"role": "tool", "tool_call_id": "c", "content": "client out"},
    {"role": "assistant", "content": "done"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [tool_call("d", "later"), tool_call("e", "denied")],
    },
    {"role": "tool", "tool_call_id": "d", "content": "error: boom"},
    {"role": "tool", "tool_call_id": "e", "content": DENIED},
    {"role": "user", "content": "x"},
]


def built(prefix: TurnPrefix, entries: list[dict[str, Any]]) -> TurnPrefix:
    extended, errors = prefix.extend(entries)
    assert extended is not None, errors
    return extended


def test_tool_executions_as_messages() -> None:
    assert to_messages(None, ENTRIES) == EXPECTED
    whole = built(EMPTY, ENTRIES)
    assert list(whole.messages) == EXPECTED


def test_a_prefix_built_a_few_entries_at_a_time_is_the_whole() -> None:
    whole = built(EMPTY, ENTRIES)
    for cut in range(len(ENTRIES) + 1):
        for second in range(cut, len(ENTRIES) + 1):
            prefix = built(
                built(built(EMPTY, ENTRIES[:cut]), ENTRIES[cut:second]), ENTRIES[second:]
            )
            assert prefix == whole, (cut, second)


def test_pending_calls_and_their_answers() -> None:
    waiting = function_call("p", "guarded", "{}", None, "m", "pending")
    entries = [user("go"), waiting]
    assert list(pending_calls(entries)) == ["p"]
    assert pending_calls([*entries, execution("p", "guarded")]) == {}
    # A function.result never answers a server call; a client call is never pending.
    assert list(pending_calls([*entries, result("p", "x")])) == ["p"]
    assert pending_calls([function_call("c", "client", "{}", None, "m")]) == {}

    confirmed = ServerCall("p", "guarded", "{}", None, None, "m", "denied")
    changed = answered(entries, [confirmed])
    assert list(changed) == [1]
    assert changed[1] == {**waiting, "confirmation_status": "denied"}
    assert waiting["confirmation_status"] == "pending"  # a copy: entries are shared


def test_client_results_ignore_server_calls() -> None:
    waiting = function_call("p", "guarded", "{}", None, "m", "pending")
    with pytest.raises(InvalidInputs) as refused:
        check_results([waiting], [result("p", "x")])
    assert refused.value.code == "unknown_tool_call"
