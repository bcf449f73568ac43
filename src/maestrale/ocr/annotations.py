"""Annotations in a JSON schema the client gives: of the whole document
(`document_annotation_format`) and of each extracted image (`bbox_annotation_format`).

They come from a chat model called through the gateway with `response_format` (so the call is
limited and accounted like any other): the document's markdown, or the text recognised inside an
image with its place on the page, is the prompt. The model is `ocr_annotation_model` from the
settings, else the first chat model of the catalog that is not the builtin test double.
"""

from __future__ import annotations

from typing import Any

from maestrale.core.errors import BadRequest
from maestrale.engines.types import ChatRequest
from maestrale.gateway.capabilities import CHAT
from maestrale.gateway.estimates import estimate_tokens
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

CHARS_PER_TOKEN = 3  # conservative, for truncating the prompt to the model's context
_DOCUMENT_PROMPT = (
    "You extract structured data from a document. The user message holds the document's text "
    "as markdown. Answer with a JSON value that follows the requested schema, and nothing else."
)
_IMAGE_PROMPT = (
    "You annotate one image found in a document. The user message gives where the image is on "
    "its page and the text recognised inside it (possibly none). Answer with a JSON value that "
    "follows the requested schema, and nothing else."
)


class AnnotationModelMissing(BadRequest):
    code = "annotation_model_missing"


def check_format(value: dict[str, Any] | None, param: str) -> dict[str, Any] | None:
    """The `response_format` to ask the chat model for; 400 unless it is `json_schema` (with a
    `schema` object) or `json_object`."""
    if value is None:
        return None
    kind = value.get("type")
    if kind == "json_object":
        return {"type": "json_object"}
    if kind != "json_schema":
        raise BadRequest(
            f"{param}: type must be json_schema or json_object, not {kind!r}",
            code="invalid_response_format",
            param=param,
        )
    schema = value.get("json_schema")
    if not isinstance(schema, dict) or not isinstance(schema.get("schema"), dict):
        raise BadRequest(
            f"{param}: json_schema must be an object with a `schema` object",
            code="invalid_response_format",
            param=param,
        )
    return {
        "type": "json_schema",
        "json_schema": {
            "name": str(schema.get("name") or "annotation"),
            "schema": schema["schema"],
            **({"description": schema["description"]} if schema.get("description") else {}),
            "strict": bool(schema.get("strict", True)),
        },
    }


def annotation_model(gateway: Gateway, configured: str | None) -> str:
    if configured:
        return configured
    best = gateway.registry.best("completion_chat")
    if best is not None:
        return best.id
    raise AnnotationModelMissing(
        "annotations need a chat model: none is served; set MAESTRALE_OCR_ANNOTATION_MODEL"
    )


async def _ask(
    gateway: Gateway,
    caller: Caller,
    model: str,
    response_format: dict[str, Any],
    system: str,
    user: str,
    correlation_id: str,
) -> str:
    call = await gateway.open(caller, model, CHAT, correlation_id=correlation_id, source="ocr")
    budget = max(call.spec.max_context_length * CHARS_PER_TOKEN * 3 // 4, 1000)
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": user[:budget]},
    ]
    await gateway.admit(call, estimate_tokens(len(system) + min(len(user), budget), None))
    request = ChatRequest(
        model=call.upstream, messages=messages, response_format=response_format, temperature=0.0
    )
    result = await gateway.chat(call, request)
    content = result.choices[0].message.get("content") if result.choices else None
    return content if isinstance(content, str) else ""


async def annotate_document(
    gateway: Gateway,
    caller: Caller,
    model: str,
    response_format: dict[str, Any],
    prompt: str | None,
    markdown: str,
    correlation_id: str,
) -> str:
    system = f"{_DOCUMENT_PROMPT}\n\n{prompt}" if prompt else _DOCUMENT_PROMPT
    return await _ask(gateway, caller, model, response_format, system, markdown, correlation_id)


async def annotate_image(
    gateway: Gateway,
    caller: Caller,
    model: str,
    response_format: dict[str, Any],
    where: str,
    text: str,
    correlation_id: str,
) -> str:
    user = f"Image: {where}\nText inside the image:\n{text or '(none)'}"
    return await _ask(gateway, caller, model, response_format, _IMAGE_PROMPT, user, correlation_id)
