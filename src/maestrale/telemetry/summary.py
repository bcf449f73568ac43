"""A trace's summary row (`telemetry_traces`), merged from the spans of each batch: spans arrive in
any order and over several batches, so every field is one that merging can keep exact (counts
and sums, min start, max end, the root when it arrives, the first and last LLM call by start).
Pure Python: the repository reads the existing rows and writes the merged ones."""

from __future__ import annotations

from typing import Any

import orjson

from maestrale.telemetry.otlp import genai

MAX_NAMES = 64  # models or tools listed in a trace's summary
MAX_MESSAGE = 64 * 1024  # characters kept of a turn's last message


def new_trace(span: dict[str, Any]) -> dict[str, Any]:
    """The summary of a trace not seen before, from the owner of its first span."""
    return {
        "workspace_id": span["workspace_id"],
        "trace_id": span["trace_id"],
        "organization_id": span["organization_id"],
        "user_id": span["user_id"],
        "service_account_id": span["service_account_id"],
        "start_ns": span["start_ns"],
        "end_ns": span["end_ns"],
        "duration_ns": 0,
        "root_span_id": "",
        "root_span_name": "",
        "service_name": "",
        "environment": "",
        "conversation_id": "",
        "workflow_name": "",
        "agent_id": "",
        "agent_name": "",
        "status_code": "Unset",
        "error_count": 0,
        "span_count": 0,
        "gen_ai_span_count": 0,
        "llm_call_count": 0,
        "tool_call_count": 0,
        "retrieval_count": 0,
        "evaluation_count": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "models_used": [],
        "tools_used": [],
        "first_turn_last_input_message": "",
        "first_turn_last_output_message": "",
        "last_turn_last_input_message": "",
        "last_turn_last_output_message": "",
        "first_turn_ns": 0,
        "last_turn_ns": 0,
    }


def merge(trace: dict[str, Any], span: dict[str, Any]) -> None:
    """Count one new span (never one already counted) into its trace's summary, in place."""
    trace["start_ns"] = min(trace["start_ns"], span["start_ns"])
    trace["end_ns"] = max(trace["end_ns"], span["end_ns"])
    trace["duration_ns"] = trace["end_ns"] - trace["start_ns"]
    trace["span_count"] += 1
    is_root = not span["parent_span_id"]
    if is_root and not trace["root_span_id"]:
        trace["root_span_id"] = span["span_id"]
        trace["root_span_name"] = span["name"]
    if span["service_name"] and (is_root or not trace["service_name"]):
        trace["service_name"] = span["service_name"]
    if not trace["environment"]:
        resource = span["resource_attributes"]
        env = resource.get("deployment.environment.name") or resource.get("deployment.environment")
        if isinstance(env, str):
            trace["environment"] = env[: genai.NAME]
    for field in ("conversation_id", "workflow_name", "agent_id", "agent_name"):
        if span[field] and (not trace[field] or is_root):
            trace[field] = span[field]
    if span["status_code"] == "Error":
        trace["status_code"] = "Error"
        trace["error_count"] += 1
    attributes = span["attributes"]
    if genai.is_gen_ai(attributes):
        trace["gen_ai_span_count"] += 1
    operation = span["operation_name"]
    if operation in genai.TOOL_OPERATIONS:
        trace["tool_call_count"] += 1
        _add_name(trace, "tools_used", span["tool_name"])
    elif operation in genai.RETRIEVAL_OPERATIONS:
        trace["retrieval_count"] += 1
    elif operation in genai.EVALUATION_OPERATIONS:
        trace["evaluation_count"] += 1
    if genai.is_llm_call(span):
        _llm_call(trace, span)


def _llm_call(trace: dict[str, Any], span: dict[str, Any]) -> None:
    trace["llm_call_count"] += 1
    # Tokens of the model calls only: an agent's span may repeat its calls' total.
    trace["input_tokens"] += span["usage_input_tokens"]
    trace["output_tokens"] += span["usage_output_tokens"]
    trace["cache_read_input_tokens"] += span["usage_cache_read_input_tokens"]
    trace["cache_creation_input_tokens"] += span["usage_cache_creation_input_tokens"]
    _add_name(trace, "models_used", span["response_model"] or span["request_model"])
    start = span["start_ns"]
    if not trace["first_turn_ns"] or start < trace["first_turn_ns"]:
        trace["first_turn_ns"] = start
        trace["first_turn_last_input_message"] = last_message(span, genai.INPUT_MESSAGES)
        trace["first_turn_last_output_message"] = last_message(span, genai.OUTPUT_MESSAGES)
    if start >= trace["last_turn_ns"]:
        trace["last_turn_ns"] = start
        trace["last_turn_last_input_message"] = last_message(span, genai.INPUT_MESSAGES)
        trace["last_turn_last_output_message"] = last_message(span, genai.OUTPUT_MESSAGES)


def _add_name(trace: dict[str, Any], field: str, name: str) -> None:
    names: list[str] = trace[field]
    if name and name not in names and len(names) < MAX_NAMES:
        trace[field] = [*names, name]


def last_message(span: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The text of the last message of a span's messages attribute (gen_ai.input.messages or
    gen_ai.output.messages: a JSON array, as text or structured; or the older gen_ai.prompt and
    gen_ai.completion), '' when there is none."""
    attributes = span["attributes"]
    for key in keys:
        found: Any = attributes.get(key)
        if found is None or found == "":
            continue
        if isinstance(found, str):
            raw: str = found
            try:
                found = orjson.loads(raw)
            except orjson.JSONDecodeError:
                return raw[:MAX_MESSAGE]
        if isinstance(found, list):
            found = found[-1] if found else None
        return _message_text(found)[:MAX_MESSAGE]
    return ""


def _message_text(message: Any) -> str:
    if message is None:
        return ""
    if isinstance(message, str):
        return message
    if isinstance(message, dict):
        parts = message.get("parts")
        if isinstance(parts, list):
            texts = [
                str(p.get("content"))
                for p in parts
                if isinstance(p, dict) and p.get("type") == "text" and p.get("content") is not None
            ]
            if texts:
                return "\n".join(texts)
        content = message.get("content")
        if isinstance(content, str):
            return content
    return orjson.dumps(message).decode("utf-8")
