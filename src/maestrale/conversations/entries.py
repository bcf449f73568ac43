"""Conversation entries: their wire shapes (always with `object` and `type`), the parsing of a
request's `inputs`, and their translation into chat messages for a model."""

from __future__ import annotations

from typing import Any

import orjson

from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id

MESSAGE_TYPES = frozenset({"message.input", "message.output"})
PLAIN_ROLES = frozenset({"system", "user", "assistant"})
PREFIXES = {
    "message.input": "msg",
    "message.output": "msg",
    "function.call": "fc",
    "function.result": "fr",
    "agent.handoff": "ho",
    "tool.execution": "tool",
}
# What a model reads of a server tool call the user denied.
DENIED = "the user denied this tool call"


class InvalidInputs(BadRequest):
    code = "invalid_inputs"


def _now() -> str:
    return utcnow().isoformat().replace("+00:00", "Z")


def now_text() -> str:
    return _now()


def entry_id(type_: str) -> str:
    return f"{PREFIXES[type_]}_{new_id().replace('-', '')}"


def entry(type_: str, *, id_: str | None = None, **fields: Any) -> dict[str, Any]:
    now = _now()
    return {
        "object": "entry",
        "type": type_,
        "created_at": now,
        "completed_at": now if type_ != "message.input" else None,
        "id": id_ or entry_id(type_),
        **fields,
    }


def message_output(
    content: str, agent_id: str | None, model: str, id_: str | None = None
) -> dict[str, Any]:
    return entry(
        "message.output",
        id_=id_,
        agent_id=agent_id,
        model=model,
        role="assistant",
        content=content,
    )


def function_call(
    call_id: str,
    name: str,
    arguments: str,
    agent_id: str | None,
    model: str,
    confirmation_status: str | None = None,
) -> dict[str, Any]:
    """A function call the client runs (`confirmation_status` None), or a server tool call
    awaiting the user's confirmation ("pending"; "allowed" or "denied" once answered)."""
    return entry(
        "function.call",
        agent_id=agent_id,
        model=model,
        tool_call_id=call_id,
        name=name,
        arguments=arguments,
        confirmation_status=confirmation_status,
    )


def is_client_call(item: dict[str, Any]) -> bool:
    """A function.call entry the client answers with a function.result (not a server tool call
    waiting for a confirmation, whose tool.execution entry answers it)."""
    return item["type"] == "function.call" and item.get("confirmation_status") is None


def tool_execution(
    id_: str,
    name: str,
    arguments: str,
    agent_id: str | None,
    model: str,
    *,
    created_at: str,
    info: dict[str, Any],
) -> dict[str, Any]:
    """A server tool call and its outcome (`info`: its tool_call_id, source, output or error,
    timing, confirmation...)."""
    return {
        "object": "entry",
        "type": "tool.execution",
        "created_at": created_at,
        "completed_at": _now(),
        "id": id_,
        "name": name,
        "arguments": arguments,
        "agent_id": agent_id,
        "model": model,
        "info": info,
    }


def tool_text(item: dict[str, Any]) -> str:
    """What a model reads of a tool.execution entry: the output, the error, or the denial."""
    info = item.get("info") or {}
    if info.get("confirmation") == "denied":
        return DENIED
    if info.get("error") is not None:
        return f"error: {info['error']}"
    output = info.get("output")
    return output if isinstance(output, str) else ""


def handoff(previous: tuple[str, str], nxt: tuple[str, str]) -> dict[str, Any]:
    return entry(
        "agent.handoff",
        previous_agent_id=previous[0],
        previous_agent_name=previous[1],
        next_agent_id=nxt[0],
        next_agent_name=nxt[1],
    )


def _content(value: Any, where: str) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(c, dict) and "type" in c for c in value):
        return value
    raise InvalidInputs(f"{where}: content must be a string or a list of chunks", param="inputs")


def arguments_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    raise InvalidInputs("function.call arguments must be an object or a JSON string")


def _text(value: Any, field: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputs(f"{where}: `{field}` must be a non-empty string", param="inputs")
    return value


def parse_inputs(inputs: Any) -> list[dict[str, Any]]:
    """The entries a request adds: a string is one user message; a list holds entries
    (`message.input`, `message.output`, `function.call`, `function.result`)."""
    if isinstance(inputs, str):
        return [entry("message.input", role="user", content=inputs, prefix=False)]
    if not isinstance(inputs, list):
        raise InvalidInputs("inputs must be a string or a list of entries", param="inputs")
    parsed: list[dict[str, Any]] = []
    for position, item in enumerate(inputs):
        where = f"inputs[{position}]"
        if not isinstance(item, dict):
            raise InvalidInputs(f"{where} must be an object", param="inputs")
        kind = item.get("type")
        if kind is None:
            kind = "function.result" if "tool_call_id" in item else "message.input"
        if kind == "message.input":
            role = item.get("role", "user")
            if role not in ("user", "assistant"):
                raise InvalidInputs(f"{where}: role must be user or assistant", param="inputs")
            parsed.append(
                entry(
                    "message.input",
                    role=role,
                    content=_content(item.get("content"), where),
                    prefix=bool(item.get("prefix", False)),
                )
            )
        elif kind == "message.output":
            content = _content(item.get("content"), where)
            parsed.append(message_output(content, item.get("agent_id"), item.get("model") or ""))
        elif kind == "function.call":
            parsed.append(
                function_call(
                    _text(item.get("tool_call_id"), "tool_call_id", where),
                    _text(item.get("name"), "name", where),
                    arguments_text(item.get("arguments", {})),
                    item.get("agent_id"),
                    item.get("model") or "",
                )
            )
        elif kind == "function.result":
            result = item.get("result")
            if not isinstance(result, str):
                raise InvalidInputs(f"{where}: `result` must be a string", param="inputs")
            parsed.append(
                entry(
                    "function.result",
                    tool_call_id=_text(item.get("tool_call_id"), "tool_call_id", where),
                    result=result,
                )
            )
        else:
            raise InvalidInputs(f"{where}: entries of type {kind!r} cannot be appended")
    if not parsed:
        raise InvalidInputs("inputs must not be empty", param="inputs")
    return parsed


def check_results(history: list[dict[str, Any]], added: list[dict[str, Any]]) -> None:
    """Every function result answers a call of the conversation (one the client runs) that has
    no result yet."""
    open_calls = {e["tool_call_id"] for e in history if is_client_call(e)}
    open_calls -= {e["tool_call_id"] for e in history if e["type"] == "function.result"}
    for item in added:
        if is_client_call(item):
            open_calls.add(item["tool_call_id"])
        elif item["type"] == "function.result":
            if item["tool_call_id"] not in open_calls:
                raise InvalidInputs(
                    f"function.result for {item['tool_call_id']!r} answers no pending "
                    "function.call of the conversation",
                    code="unknown_tool_call",
                    param="inputs",
                )
            open_calls.discard(item["tool_call_id"])


def to_messages(instructions: str | None, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat messages a model sees for these entries (handoff records are not messages)."""
    messages = [{"role": "system", "content": instructions}] if instructions else []
    append_messages(messages, [], entries)
    return messages


def append_messages(
    messages: list[dict[str, Any]],
    special: list[int],
    entries: list[dict[str, Any]],
    group: int | None = None,
) -> tuple[int, int | None]:
    """Add the chat messages of `entries` after `messages`, and to `special` the positions of
    those that are not plain text messages (`{"role": "user" | "assistant" | "system",
    "content": str}`): prefixes, chunked content, tool calls and results, which a turn checks
    further (see `loop.turn_request`). Return the position of the first message added or
    changed, and the `group` of the last entries: a function call following an assistant
    message with tool calls joins it, and so does a tool execution, or one following tool
    executions (the group: the position of their assistant message, whose tool messages follow
    it) joins theirs; a joined message is replaced by a copy, never changed, so `messages` may
    share its dicts with others. A function.call entry waiting for (or given) a confirmation is
    no message: its tool execution makes the call."""
    first = len(messages)
    for item in entries:
        kind = item["type"]
        if kind == "tool.execution":
            call = {
                "id": (item.get("info") or {}).get("tool_call_id") or item["id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and last.get("tool_calls"):
                group = len(messages) - 1
            if group is None:
                group = len(messages)
                special.append(group)
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            else:
                host = messages[group]
                messages[group] = {**host, "tool_calls": [*host["tool_calls"], call]}
                first = min(first, group)
            special.append(len(messages))
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": tool_text(item)}
            )
            continue
        if kind == "function.call" and item.get("confirmation_status") is not None:
            continue
        # Any other entry ends a group of tool executions (a handoff ends its step).
        group = None
        if kind == "message.output":
            content = model_content(item["content"])
            if type(content) is not str:
                special.append(len(messages))
            messages.append({"role": "assistant", "content": content})
        elif kind == "message.input":
            content, role = item["content"], item["role"]
            message = {"role": role, "content": content}
            if item.get("prefix"):
                message["prefix"] = True
                special.append(len(messages))
            elif type(content) is not str or role not in PLAIN_ROLES:
                special.append(len(messages))
            messages.append(message)
        elif kind == "function.call":
            call = {
                "id": item["tool_call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and last.get("tool_calls"):
                messages[-1] = {**last, "tool_calls": [*last["tool_calls"], call]}
                first = min(first, len(messages) - 1)
            else:
                special.append(len(messages))
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function.result":
            special.append(len(messages))
            messages.append(
                {"role": "tool", "tool_call_id": item["tool_call_id"], "content": item["result"]}
            )
    return first, group


# Chunks of an answer that are for the client (a tool's citations and files), not the model.
CLIENT_CHUNKS = frozenset({"tool_reference", "tool_file"})


def model_content(content: Any) -> Any:
    """What a model reads of an answer's content: without the citations and files the server's
    tools added (text alone when nothing else is left)."""
    if not isinstance(content, list):
        return content
    kept = [c for c in content if not (isinstance(c, dict) and c.get("type") in CLIENT_CHUNKS)]
    if all(isinstance(c, dict) and c.get("type") == "text" for c in kept):
        return "".join(str(c.get("text") or "") for c in kept)
    return kept
