"""Response items and conversation entries, both ways: a request's `input` (a string, or items:
messages with text, image and file parts, function calls and their outputs) becomes the entries
it adds to a conversation; the entries a run adds become the response's `output` (messages and
function calls: the items both SDKs parse; the server's own tool executions and handoffs stay
in the conversation), and the entries a request added are its `input_items`."""

from __future__ import annotations

from typing import Any

from maestrale.conversations.entries import (
    InvalidInputs,
    arguments_text,
    entry,
    function_call,
    message_output,
)
from maestrale.responses.files import pending

INPUT_ROLES = frozenset({"user", "assistant", "system", "developer"})
# Items that carry what a model said or thought, not what it reads: reasoning is not replayed.
SKIPPED = frozenset({"reasoning"})


class UnknownItem(InvalidInputs):
    code = "invalid_input_item"


def _fail(where: str, message: str) -> InvalidInputs:
    return InvalidInputs(f"{where}: {message}", param=where)


def _source(part: dict[str, Any], fields: tuple[str, ...], where: str) -> tuple[str, str]:
    """The one field of `fields` that says where a part's content is, and its value."""
    given = [f for f in fields if part.get(f) is not None]
    if len(given) != 1:
        names = ", ".join(f"`{f}`" for f in fields)
        raise _fail(where, f"a {part.get('type')} part needs exactly one of {names}")
    value = part[given[0]]
    if not isinstance(value, str) or not value:
        raise _fail(where, f"`{given[0]}` must be a non-empty string")
    return given[0], value


def _part(part: Any, where: str) -> dict[str, Any]:
    """One content part of an input message as a chat content chunk."""
    if not isinstance(part, dict):
        raise _fail(where, "a content part must be an object")
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        text = part.get("text")
        if not isinstance(text, str):
            raise _fail(where, f"a {kind} part needs a `text` string")
        return {"type": "text", "text": text}
    if kind == "input_image":
        field, value = _source(part, ("image_url", "file_id"), where)
        if field == "image_url":
            return {"type": "image_url", "image_url": value}
        # A workspace file: read by `files.read_input_files` once the request is checked.
        return pending("image", field, value, None, where)
    if kind == "input_file":
        field, value = _source(part, ("file_id", "file_url", "file_data"), where)
        filename = part.get("filename")
        if filename is not None and not isinstance(filename, str):
            raise _fail(where, "`filename` must be a string")
        return pending("file", field, value, filename, where)
    raise UnknownItem(f"{where}: content part type {kind!r} is unknown", param=where)


def _content(value: Any, where: str) -> str | list[dict[str, Any]]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value:
        parts = [_part(p, f"{where}[{i}]") for i, p in enumerate(value)]
        if all(p["type"] == "text" for p in parts):
            return "".join(p["text"] for p in parts) if len(parts) == 1 else parts
        return parts
    raise _fail(where, "content must be a string or a non-empty list of parts")


def _output_text(output: Any, where: str) -> str:
    """A function call's output: a string, or parts whose text is joined."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(
            str(p.get("text") or "") for p in output if isinstance(p, dict) and "text" in p
        )
    raise _fail(where, "`output` must be a string or a list of parts")


def _required(item: dict[str, Any], field: str, where: str) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value:
        raise _fail(where, f"`{field}` must be a non-empty string")
    return value


def input_entries(value: str | list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """The entries a request's `input` adds, in order; a 400 naming the first item this server
    cannot read (an unknown type, a part without its field)."""
    if isinstance(value, str):
        return [entry("message.input", role="user", content=value, prefix=False)]
    entries: list[dict[str, Any]] = []
    for position, item in enumerate(value):
        where = f"input[{position}]"
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in INPUT_ROLES:
                raise _fail(where, "role must be user, assistant, system or developer")
            content = _content(item.get("content"), f"{where}.content")
            if role == "assistant":
                entries.append(message_output(_flat(content, where), None, model))
            else:
                role = "system" if role == "developer" else role
                entries.append(entry("message.input", role=role, content=content, prefix=False))
        elif kind == "function_call":
            entries.append(
                function_call(
                    _required(item, "call_id", where),
                    _required(item, "name", where),
                    arguments_text(item.get("arguments", "{}")),
                    None,
                    model,
                )
            )
        elif kind == "function_call_output":
            entries.append(
                entry(
                    "function.result",
                    tool_call_id=_required(item, "call_id", where),
                    result=_output_text(item.get("output"), f"{where}.output"),
                )
            )
        elif kind not in SKIPPED:
            raise UnknownItem(
                f"{where}: item type {kind!r} is unknown: send message, function_call or "
                "function_call_output items",
                param=where,
            )
    if not entries:
        raise InvalidInputs("input must hold at least one message or function output")
    return entries


def _flat(content: str | list[dict[str, Any]], where: str) -> str:
    """An assistant message's text: what a model said is text only."""
    if isinstance(content, str):
        return content
    if any(p.get("type") != "text" for p in content):
        raise _fail(where, "an assistant message holds text parts only")
    return "".join(str(p.get("text") or "") for p in content)


# Output.


def citations(chunks: list[dict[str, Any]], end: int) -> list[dict[str, Any]]:
    """The citations and files a server tool added to an answer, as Responses annotations at the
    end of its text."""
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        if chunk.get("type") == "tool_reference" and chunk.get("url"):
            out.append(
                {
                    "type": "url_citation",
                    "url": chunk["url"],
                    "title": chunk.get("title") or chunk["url"],
                    "start_index": end,
                    "end_index": end,
                }
            )
        elif chunk.get("type") == "tool_file" and chunk.get("file_id"):
            out.append({"type": "file_path", "file_id": chunk["file_id"], "index": end})
    return out


def output_text(content: Any) -> tuple[str, list[dict[str, Any]]]:
    """The text of an answer's content, and its annotations."""
    if isinstance(content, str):
        return content, []
    chunks = [c for c in content or [] if isinstance(c, dict)]
    text = "".join(str(c.get("text") or "") for c in chunks if c.get("type") == "text")
    return text, citations(chunks, len(text))


def message_item(
    item_id: str, text: str, annotations: list[dict[str, Any]], status: str
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [
            {"type": "output_text", "text": text, "annotations": annotations, "logprobs": []}
        ],
    }


def call_item(entry_: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": entry_["id"],
        "call_id": entry_["tool_call_id"],
        "name": entry_["name"],
        "arguments": entry_["arguments"],
        "status": status,
    }


def output_items(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's output entries as Responses output items: answers and the calls the client runs
    (or confirms); tool executions and handoffs are the server's own steps."""
    items: list[dict[str, Any]] = []
    for e in entries:
        if e["type"] == "message.output":
            text, annotations = output_text(e["content"])
            items.append(message_item(e["id"], text, annotations, "completed"))
        elif e["type"] == "function.call":
            items.append(call_item(e))
    return items


# Input items (GET /v1/responses/{id}/input_items).


def _input_part(chunk: dict[str, Any]) -> dict[str, Any]:
    kind = chunk.get("type")
    if kind == "image_url":
        url = chunk.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if kind == "document_url":
        return {"type": "input_file", "file_url": chunk.get("document_url")}
    return {"type": "input_text", "text": str(chunk.get("text") or "")}


def input_item(e: dict[str, Any]) -> dict[str, Any] | None:
    """An entry a request added, as the input item that added it."""
    kind = e["type"]
    if kind == "message.input":
        content = e["content"]
        chunks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        return {
            "type": "message",
            "id": e["id"],
            "role": e["role"],
            "status": "completed",
            "content": [_input_part(c) for c in chunks if isinstance(c, dict)],
        }
    if kind == "message.output":
        text, annotations = output_text(e["content"])
        return message_item(e["id"], text, annotations, "completed")
    if kind == "function.call":
        return call_item(e)
    if kind == "function.result":
        return {
            "type": "function_call_output",
            "id": e["id"],
            "call_id": e["tool_call_id"],
            "output": e["result"],
            "status": "completed",
        }
    return None
