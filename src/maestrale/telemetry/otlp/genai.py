"""The OpenTelemetry GenAI semantic conventions a span's columns are copied from (the attributes
stay in `attributes` as they came). Older names are read where the conventions renamed one."""

from __future__ import annotations

from typing import Any

INT64_MAX = (1 << 63) - 1
NAME = 256

# What the official workflows worker (`mistralai-workflows`) ties its telemetry with: each span
# of a workflow or activity carries the execution id and the workflow type; each log record its
# handler exports carries the execution id and, in or out of a workflow, the deployment's name.
SPAN_EXECUTION = "wf.workflow.execution_id"
WORKFLOW_TYPE = "wf.workflow.type"
LOG_EXECUTION = "workflowExecutionID"
LOG_DEPLOYMENT = "deploymentName"

# Column → attribute keys, the first present wins.
TEXT_COLUMNS: dict[str, tuple[str, ...]] = {
    "operation_name": ("gen_ai.operation.name",),
    "provider_name": ("gen_ai.provider.name", "gen_ai.system"),
    "request_model": ("gen_ai.request.model",),
    "response_model": ("gen_ai.response.model",),
    "response_id": ("gen_ai.response.id",),
    "conversation_id": ("gen_ai.conversation.id",),
    "agent_id": ("gen_ai.agent.id",),
    "agent_name": ("gen_ai.agent.name",),
    "tool_name": ("gen_ai.tool.name",),
    "tool_type": ("gen_ai.tool.type",),
    "error_type": ("error.type",),
    # The workflow a span runs in: the official Mistral workflows worker's key, then the GenAI
    # conventions' own.
    "workflow_name": (WORKFLOW_TYPE, "gen_ai.workflow.name", "workflow.name"),
    "execution_id": (SPAN_EXECUTION,),
}
INT_COLUMNS: dict[str, tuple[str, ...]] = {
    "usage_input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "usage_output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "usage_cache_read_input_tokens": (
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
    ),
    "usage_cache_creation_input_tokens": (
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
    ),
}
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
RETRIEVAL_OPERATIONS = frozenset({"retrieval", "embeddings"})
EVALUATION_OPERATIONS = frozenset({"evaluation", "evaluate"})
INPUT_MESSAGES = ("gen_ai.input.messages", "gen_ai.prompt")
OUTPUT_MESSAGES = ("gen_ai.output.messages", "gen_ai.completion")


def columns(attributes: dict[str, Any]) -> dict[str, Any]:
    """The GenAI columns of a span from its (flattened) attributes."""
    row: dict[str, Any] = {}
    for column, keys in TEXT_COLUMNS.items():
        row[column] = _text(_first(attributes, keys))
    for column, keys in INT_COLUMNS.items():
        row[column] = _count(_first(attributes, keys))
    return row


def log_columns(attributes: dict[str, Any]) -> dict[str, Any]:
    """The workflow columns of a log record from its (flattened) attributes."""
    return {
        "execution_id": _text(_first(attributes, (LOG_EXECUTION, SPAN_EXECUTION))),
        "deployment_name": _text(_first(attributes, (LOG_DEPLOYMENT,))),
    }


def _first(attributes: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        found = attributes.get(key)
        if found is not None and found != "":
            return found
    return None


def _text(found: Any) -> str:
    if found is None or isinstance(found, (list, dict)):
        return ""
    return str(found)[:NAME]


def _count(found: Any) -> int:
    """A token count: a non-negative integer within 64 bits (else 0), or its decimal text."""
    if isinstance(found, bool):
        return 0
    if isinstance(found, str) and found.isascii() and found.isdigit() and len(found) < 20:
        found = int(found)
    if isinstance(found, float) and found.is_integer():
        found = int(found)
    if isinstance(found, int) and 0 <= found <= INT64_MAX:
        return found
    return 0


def is_llm_call(row: dict[str, Any]) -> bool:
    return row["operation_name"] in LLM_OPERATIONS or (
        not row["operation_name"] and bool(row["request_model"])
    )


def is_gen_ai(attributes: dict[str, Any]) -> bool:
    return any(key.startswith("gen_ai.") for key in attributes)
