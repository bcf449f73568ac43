"""Response bodies of the gateway, built as plain dicts (the hot path skips model validation)."""

from __future__ import annotations

import base64
import struct
from typing import Any

from maestrale.engines.types import ChatChunk, ChatResult, Choice, Usage


def usage_dict(usage: Usage, tier: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if tier is not None:
        body["service_tier"] = tier
    return body


def _choice(choice: Choice) -> dict[str, Any]:
    body = {
        "index": choice.index,
        "message": assistant_message(choice.message),
        "finish_reason": choice.finish_reason,
    }
    if choice.logprobs is not None:
        body["logprobs"] = {"content": choice.logprobs}
    return body


def assistant_message(message: dict[str, Any]) -> dict[str, Any]:
    tool_calls = message.get("tool_calls") or None
    return {
        "role": "assistant",
        "content": message.get("content") if message.get("content") is not None else "",
        "tool_calls": tool_calls,
        "prefix": False,
    }


def completion_body(
    completion_id: str, model: str, created: int, result: ChatResult, tier: str | None = None
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "model": model,
        "created": created,
        "choices": [_choice(choice) for choice in result.choices],
        "usage": usage_dict(result.usage, tier),
    }


def chunk_body(
    completion_id: str, model: str, created: int, chunk: ChatChunk, tier: str | None = None
) -> dict[str, Any]:
    delta = chunk.delta
    if delta.get("content") is None:
        # The platform sends `"content": ""` in every delta (the finish chunk, tool calls):
        # clients concatenate `delta.content`, and the SDK's default for a missing one is Unset.
        delta = {**delta, "content": ""}
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "model": model,
        "created": created,
        "choices": [{"index": chunk.index, "delta": delta, "finish_reason": chunk.finish_reason}],
    }
    if chunk.logprobs is not None:
        body["choices"][0]["logprobs"] = {"content": chunk.logprobs}
    if chunk.usage is not None:
        body["usage"] = usage_dict(chunk.usage, tier)
    return body


def quantize(vector: list[float], dtype: str) -> list[float] | list[int]:
    """The platform's embedding dtypes: int8/uint8 scale [-1, 1]; binary/ubinary pack the signs
    eight dimensions a byte (signed or unsigned)."""
    if dtype == "float":
        return vector
    if dtype == "int8":
        return [max(-128, min(127, round(v * 127))) for v in vector]
    if dtype == "uint8":
        return [max(0, min(255, round((v + 1) * 127.5))) for v in vector]
    packed = []
    for start in range(0, len(vector), 8):
        byte = 0
        for bit, v in enumerate(vector[start : start + 8]):
            if v > 0:
                byte |= 0x80 >> bit
        packed.append(byte - 128 if dtype == "binary" else byte)
    return packed


def encode_vector(vector: list[float] | list[int], encoding: str, dtype: str) -> Any:
    if encoding != "base64":
        return vector
    if dtype == "float":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
    fmt = "b" if dtype in ("int8", "binary") else "B"
    return base64.b64encode(struct.pack(f"<{len(vector)}{fmt}", *vector)).decode()
