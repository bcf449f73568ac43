"""The tools, tool choice, output format and sampling fields of a response request, in the shapes
of a conversation (its `tools` and `completion_args`): Responses function tools are flat
(`{"type": "function", "name", "parameters"}`), a conversation's nest the function; the built-in
tools this server runs keep their own shapes (OpenAI's names of the same tools are read as
this server's); a tool this server cannot run is a 400 `tool_unavailable` naming it."""

from __future__ import annotations

from typing import Any, get_args

from maestrale.agents.schemas import AgentToolIn
from maestrale.conversations.server_tools import ToolUnavailable
from maestrale.core.errors import BadRequest
from maestrale.responses.schemas import ResponseCreate, ResponseInputs

# The server's own tool types, run by the conversation runtime (tools, connectors): those an agent
# may hold but functions.
BUILT_IN = frozenset(get_args(AgentToolIn.model_fields["type"].annotation)) - {"function"}
# OpenAI's names of tools this server runs under its own.
ALIASES = {"web_search_preview": "web_search"}
FUNCTION_FIELDS = ("name", "description", "parameters", "strict")


class InvalidTool(BadRequest):
    code = "invalid_tool"


def _function(tool: dict[str, Any], where: str) -> dict[str, Any]:
    nested = tool.get("function")
    source = nested if isinstance(nested, dict) else tool  # a chat-style tool is read too
    name = source.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidTool(f"{where}: a function tool needs a `name`", param=where)
    parameters = source.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise InvalidTool(f"{where}: `parameters` must be a JSON schema object", param=where)
    function = {k: source[k] for k in FUNCTION_FIELDS if source.get(k) is not None}
    function.setdefault("parameters", {"type": "object", "properties": {}})
    return {"type": "function", "function": function}


def conversation_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The request's tools as a conversation's: function tools (a namespace's too), and the
    built-in tools this server runs (whether it can run them here is checked when the target is
    equipped: a missing setting is a 400 `tool_unavailable` naming it)."""
    out: list[dict[str, Any]] = []
    for position, tool in enumerate(tools or []):
        where = f"tools[{position}]"
        kind = tool.get("type")
        if kind == "function":
            out.append(_function(tool, where))
        elif kind == "namespace":
            for inner, member in enumerate(tool.get("tools") or []):
                if not isinstance(member, dict) or member.get("type") != "function":
                    raise ToolUnavailable(
                        f"{where}.tools[{inner}]: only function tools can be in a namespace "
                        "on this server",
                        param=where,
                    )
                out.append(_function(member, f"{where}.tools[{inner}]"))
        elif isinstance(kind, str) and ALIASES.get(kind, kind) in BUILT_IN:
            out.append({**tool, "type": ALIASES.get(kind, kind)})
        elif kind == "file_search":
            # OpenAI's vector stores are this server's libraries.
            stores = tool.get("vector_store_ids")
            out.append({"type": "document_library", "library_ids": stores or []})
        else:
            runs = ", ".join(sorted(BUILT_IN))
            raise ToolUnavailable(
                f"{where}: tool type {kind!r} cannot run on this server: it runs function tools "
                f"(run by the client) and {runs}",
                param=where,
            )
    return out


def _tool_choice(choice: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        if isinstance(name, str) and name:
            return {"type": "function", "function": {"name": name}}
    raise InvalidTool(
        "tool_choice must be 'auto', 'none', 'required' or {'type': 'function', 'name': ...}",
        param="tool_choice",
    )


def response_format(body: ResponseInputs) -> dict[str, Any] | None:
    """`text.format` as a chat `response_format` (a JSON schema is enforced by the engine: the
    local model's grammar, which refuses a schema it cannot express)."""
    fmt = body.text.format if body.text is not None else None
    if fmt is None or fmt.get("type") == "text":
        return None
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        schema = fmt.get("schema")
        name = fmt.get("name")
        if not isinstance(schema, dict) or not isinstance(name, str) or not name:
            raise BadRequest(
                "text.format of type json_schema needs a `name` and a `schema` object",
                code="invalid_format",
                param="text.format",
            )
        json_schema = {"name": name, "schema": schema, "strict": bool(fmt.get("strict"))}
        if isinstance(fmt.get("description"), str):
            json_schema["description"] = fmt["description"]
        return {"type": "json_schema", "json_schema": json_schema}
    raise BadRequest(
        f"text.format type {fmt.get('type')!r} is unknown: use text, json_object or json_schema",
        code="invalid_format",
        param="text.format",
    )


def completion_args(body: ResponseInputs) -> dict[str, Any]:
    """The completion arguments of the request's model turns."""
    args: dict[str, Any] = {}
    choice = _tool_choice(body.tool_choice)
    if choice is not None:
        args["tool_choice"] = choice
    fmt = response_format(body)
    if fmt is not None:
        args["response_format"] = fmt
    if body.reasoning is not None and body.reasoning.effort is not None:
        args["reasoning_effort"] = body.reasoning.effort
    if body.parallel_tool_calls is not None:
        args["parallel_tool_calls"] = body.parallel_tool_calls
    if isinstance(body, ResponseCreate):
        sampling = {
            "temperature": body.temperature,
            "top_p": body.top_p,
            "max_tokens": body.max_output_tokens,
        }
        args.update({k: v for k, v in sampling.items() if v is not None})
    return args
