"""The response object (mistralai 3.x's CreateResponseResponse, OpenAI's Response): every key
the SDKs read is present, `null` where nothing applies."""

from __future__ import annotations

import time
from typing import Any

from maestrale.core.ids import new_id
from maestrale.responses.schemas import ResponseCreate

# The codes a failed response's `error` may carry (the SDK's ResponsesError enumerates them).
RATE_LIMITED, INVALID, SERVER = "rate_limit_exceeded", "invalid_prompt", "server_error"


def new_response_id() -> str:
    return "resp_" + new_id().replace("-", "")


def usage_of(usage: dict[str, int] | None) -> dict[str, Any] | None:
    """A run's usage (prompt and completion tokens of all its model turns) in Responses terms."""
    if usage is None:
        return None
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def without_secrets(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as a response shows it: a connector's authorization value left out (it is sealed
    where it is kept, and never shown)."""
    auth = tool.get("authorization")
    if isinstance(auth, dict) and "value" in auth:
        return {**tool, "authorization": {k: v for k, v in auth.items() if k != "value"}}
    if isinstance(auth, str):
        return {k: v for k, v in tool.items() if k != "authorization"}
    return tool


def text_config(body: ResponseCreate) -> dict[str, Any]:
    fmt = body.text.format if body.text is not None and body.text.format else {"type": "text"}
    verbosity = body.text.verbosity if body.text is not None else None
    return {"format": fmt, "verbosity": verbosity or "medium"}


def initial(response_id: str, body: ResponseCreate, model: str, status: str) -> dict[str, Any]:
    """The response as it starts (queued or in progress): its request's settings, no output."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": time.time(),
        "completed_at": None,
        "status": status,
        "model": model,
        "output": [],
        "output_text": "",
        "error": None,
        "incomplete_details": None,
        "instructions": body.instructions,
        "tools": [without_secrets(tool) for tool in body.tools or []],
        "tool_choice": body.tool_choice if body.tool_choice is not None else "auto",
        "parallel_tool_calls": body.parallel_tool_calls is not False,
        "temperature": body.temperature,
        "top_p": body.top_p,
        "max_output_tokens": body.max_output_tokens,
        "max_tool_calls": body.max_tool_calls,
        "metadata": body.metadata or {},
        "previous_response_id": body.previous_response_id,
        "store": body.store is not False,
        "background": bool(body.background),
        "text": text_config(body),
        "truncation": body.truncation or "disabled",
        "reasoning": None,
        "usage": None,
        "user": body.user,
        "safety_identifier": body.safety_identifier,
        "prompt_cache_key": body.prompt_cache_key,
        "prompt_cache_retention": None,
        "service_tier": "default",
        "top_logprobs": body.top_logprobs or 0,
        # OpenAI's echo of the stored prompt the response ran (only when it named one).
        **({"prompt": body.prompt.stored()} if body.prompt is not None else {}),
    }


def finished(
    response: dict[str, Any],
    output: list[dict[str, Any]],
    usage: dict[str, int],
    finish_reason: str,
) -> dict[str, Any]:
    """The response once its run ended: completed, or incomplete when the output token limit
    cut its last answer."""
    cut = finish_reason == "length"
    text = "".join(
        part["text"]
        for item in output
        if item["type"] == "message"
        for part in item["content"]
        if part.get("type") == "output_text"
    )
    return {
        **response,
        "status": "incomplete" if cut else "completed",
        "completed_at": time.time(),
        "output": output,
        "output_text": text,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "usage": usage_of(usage),
    }


def failed(response: dict[str, Any], status: int | None, message: str) -> dict[str, Any]:
    """The response of a run that failed after it started (a model or tool failure)."""
    code = RATE_LIMITED if status == 429 else INVALID if status and status < 500 else SERVER
    return {**response, "status": "failed", "error": {"code": code, "message": message}}
