"""What a judge reads of a span, and which spans a config samples.

A span's conversation is its `gen_ai.input.messages` and `gen_ai.output.messages` attributes
(OpenTelemetry GenAI: JSON arrays of `{role, parts: [{type, content}]}`, sent as a JSON string
or as a structured value), each message flattened to `{role, content}` text; a reference's
mapping may name other attributes for `input` and `output`. A span with neither is judged on
its name and attributes, as text.

Sampling is deterministic, so a resumed run decides as the interrupted one did: a
probabilistic config draws from a hash of the config and the span's ids; an attribute_hash
config from a hash of the attribute's value alone (every span of one conversation, say, is in
or out together); a span without that attribute is not sampled."""

from __future__ import annotations

import hashlib
import json
from typing import Any

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
# A span's text is bounded before it reaches a judge's prompt.
MAX_TEXT = 100_000


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _content(message: dict[str, Any]) -> str:
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            content = part.get("content", part.get("text"))
            if content is None:
                content = part.get("result", part.get("arguments"))
            if content is not None:
                texts.append(content if isinstance(content, str) else json.dumps(content))
        return "\n".join(texts)
    content = message.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def messages_of(value: Any, default_role: str) -> list[dict[str, Any]]:
    """An attribute's messages as `{role, content}` (a bare string is one message)."""
    value = _decoded(value)
    if value is None:
        return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [{"role": default_role, "content": str(value)[:MAX_TEXT]}]
    found = []
    for message in value:
        if isinstance(message, dict):
            role = message.get("role")
            role = role if isinstance(role, str) and role else default_role
            found.append({"role": role, "content": _content(message)[:MAX_TEXT]})
        elif message is not None:
            found.append({"role": default_role, "content": str(message)[:MAX_TEXT]})
    return found


def conversation(span: dict[str, Any], mapping: dict[str, str]) -> list[dict[str, Any]]:
    """The messages a judge reads for this span."""
    attributes: dict[str, Any] = span["attributes"]
    asked = messages_of(attributes.get(mapping.get("input", INPUT)), "user")
    answered = messages_of(attributes.get(mapping.get("output", OUTPUT)), "assistant")
    if asked or answered:
        return asked + answered
    text = json.dumps(
        {"span_name": span["name"], "attributes": attributes}, ensure_ascii=False, default=str
    )
    return [{"role": "user", "content": text[:MAX_TEXT]}]


def _draw(*parts: str) -> float:
    """A number in [0, 100) fixed by `parts`."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 * 100


def _attribute(span: dict[str, Any], name: str) -> Any:
    for source in (span["attributes"], span["resource_attributes"]):
        if name in source:
            return source[name]
    return span.get(name) or None  # trace_id, conversation_id, user_id…


def sampled(span: dict[str, Any], config_id: str, sampling: dict[str, Any] | None) -> bool:
    """Whether a config with this sampling evaluates the span."""
    if sampling is None:
        return True
    percentage = float(sampling["percentage"])
    if sampling["type"] == "attribute_hash":
        value = _attribute(span, sampling["attribute"])
        if value is None:
            return False
        return _draw(json.dumps(value, sort_keys=True, default=str)) < percentage
    return _draw(config_id, span["trace_id"], span["span_id"]) < percentage
