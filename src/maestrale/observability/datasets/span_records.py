"""A telemetry span as a dataset record: the request's mapping contract (version 1) applied to
the span's attribute maps, and the span's OpenTelemetry GenAI messages as the record's
conversation.

Mapping rules (the SDK's SpanDatasetMappingContract): each mapping reads one attribute by its
literal key (dots are not a path) from `span_attributes` or `resource_attributes`; a missing,
null, blank-string or empty-array value omits the target key; a string holding a JSON object or
array becomes that structure, any other string stays a string.

Messages: `gen_ai.input.messages` / `gen_ai.output.messages` (and `gen_ai.system_instructions`)
are lists in the GenAI shape `{role, parts: [{type, ...}]}` (as JSON text or as structured
attribute values); they become chat messages `{role, content}` (an assistant's tool calls as
`tool_calls`, a tool's response as a `tool` message with its `tool_call_id`). The older
`gen_ai.prompt` / `gen_ai.completion` attributes, already `{role, content}`, are read too. A
mapping whose target is `messages` is converted the same way; when no mapping targets
`messages`, the span's own input, output and system messages make them."""

from __future__ import annotations

from typing import Any

import orjson

from maestrale.core.validation import JsonProblem, check_json

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
SYSTEM = "gen_ai.system_instructions"
LEGACY = ("gen_ai.prompt", "gen_ai.completion")


def mapped_value(value: Any) -> Any:
    """An attribute's value as a mapping rule gives it (None: omit the target key)."""
    if value is None or value == []:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        head = value.lstrip()[:1]
        if head in ("{", "["):
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                return value
    return value


def apply_mappings(
    mappings: list[dict[str, Any]], span: dict[str, Any], resource: dict[str, Any]
) -> dict[str, Any]:
    """The payload the contract's mappings make of one span's attribute maps."""
    payload: dict[str, Any] = {}
    for mapping in mappings:
        source = mapping["source_field"]
        attributes = span if source["namespace"] == "span_attributes" else resource
        value = mapped_value(attributes.get(source["key"]))
        if value is not None:
            payload[mapping["target_field"]] = value
    return payload


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _part_text(part: dict[str, Any]) -> str | None:
    """The text a content part contributes (text, reasoning aside, a media part by reference)."""
    kind = part.get("type")
    if kind == "text":
        return _text(part.get("content", ""))
    if kind in ("uri", "file", "blob"):
        where = part.get("uri") or part.get("file_id") or part.get("mime_type") or kind
        return f"[{part.get('modality', kind)}: {where}]"
    return None


def _from_genai(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One GenAI message as chat messages (a tool message per tool call response)."""
    role = str(message.get("role") or "user")
    parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
    texts = [t for p in parts if (t := _part_text(p)) is not None]
    calls = [p for p in parts if p.get("type") == "tool_call"]
    responses = [p for p in parts if p.get("type") == "tool_call_response"]
    out: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": str(p.get("id") or ""),
            "content": _text(p.get("response")),
        }
        for p in responses
    ]
    if texts or calls or not responses:
        chat: dict[str, Any] = {"role": role, "content": "".join(texts)}
        if calls:
            chat["tool_calls"] = [
                {
                    "id": str(c.get("id") or ""),
                    "type": "function",
                    "function": {"name": str(c.get("name") or ""), "arguments": _args(c)},
                }
                for c in calls
            ]
        if message.get("name"):
            chat["name"] = str(message["name"])
        out.insert(0, chat)
    return out


def _args(call: dict[str, Any]) -> str:
    arguments = call.get("arguments")
    return "{}" if arguments is None else _text(arguments)


def chat_messages(value: Any) -> list[dict[str, Any]] | None:
    """A list of GenAI (or already chat-shaped) messages as chat messages; None if `value` is
    not such a list."""
    if not isinstance(value, list):
        return None
    messages: list[dict[str, Any]] = []
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return None
        if "parts" in message:
            messages.extend(_from_genai(message))
        else:
            messages.append(message)
    return messages


def _system(value: Any) -> list[dict[str, Any]]:
    """`gen_ai.system_instructions` (a list of parts) as one system message."""
    if not isinstance(value, list):
        return []
    texts = [t for p in value if isinstance(p, dict) and (t := _part_text(p)) is not None]
    return [{"role": "system", "content": "".join(texts)}] if texts else []


def span_messages(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """The span's conversation: system instructions, input and output messages."""
    messages = _system(mapped_value(attributes.get(SYSTEM)))
    for key in (INPUT, OUTPUT):
        messages += chat_messages(mapped_value(attributes.get(key))) or []
    if not any(m["role"] != "system" for m in messages):
        messages = []
        for key in LEGACY:
            messages += chat_messages(mapped_value(attributes.get(key))) or []
    return messages


def span_payload(
    mappings: list[dict[str, Any]], span: dict[str, Any], resource: dict[str, Any]
) -> tuple[dict[str, Any] | None, str | None]:
    """The record payload of a span, or None and why it is skipped."""
    payload = apply_mappings(mappings, span, resource)
    mapped = "messages" in payload
    messages = chat_messages(payload["messages"]) if mapped else span_messages(span)
    if not messages or not any(m["role"] != "system" for m in messages):
        return None, "no messages"
    payload["messages"] = messages
    try:
        check_json(payload)
    except JsonProblem:
        return None, "attributes not storable"
    return payload, None
