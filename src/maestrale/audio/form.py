"""The transcription request's body: multipart (the SDK's usual form, with a `file` part),
`application/x-www-form-urlencoded` (what httpx sends when there is no file part, e.g. with
`file_url`), or JSON (for hand-written clients). The file part is read under the audio size limit
and refused with 413 as soon as it passes it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import orjson
from pydantic import ValidationError
from python_multipart.multipart import parse_options_header

from maestrale.audio.schemas import ARRAY_FIELDS, TranscriptionForm
from maestrale.core.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from maestrale.core.validation import RequestInvalid
from maestrale.files.multipart import FILE_END, FilePart, FormField, MultipartReader

# A body without a file part holds form fields only, but `file_url` may be a base64 data: URL:
# such a body may be as large as the audio limit allows in base64, plus this for the rest.
FIELDS_SLACK = 64 * 1024
# Multipart framing around the file part, tolerated beyond the audio limit in Content-Length.
FRAMING_SLACK = 64 * 1024


@dataclass(frozen=True, slots=True)
class UploadedAudio:
    data: bytes
    filename: str
    content_type: str | None


def audio_too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the audio file exceeds the limit of {limit} bytes", code="audio_too_large"
    )


async def _read_fields(body: AsyncIterator[bytes], max_audio_bytes: int) -> bytes:
    limit = max_audio_bytes * 4 // 3 + FIELDS_SLACK
    out = bytearray()
    async for chunk in body:
        out += chunk
        if len(out) > limit:
            raise audio_too_large(max_audio_bytes)
    return bytes(out)


def _collect(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Form pairs as model input: repeated and `name[]` fields as lists, others their last value."""
    fields: dict[str, Any] = {}
    for raw_name, value in pairs:
        name = raw_name.removesuffix("[]")
        if name in ARRAY_FIELDS:
            fields.setdefault(name, []).append(value)
        else:
            fields[name] = value
    return fields


def parse_form(fields: dict[str, Any]) -> TranscriptionForm:
    """The validated fields; 422 in FastAPI's shape when they are not."""
    try:
        return TranscriptionForm.model_validate(fields)
    except ValidationError as exc:
        raise RequestInvalid(exc) from exc


async def _multipart(
    content_type: str, body: AsyncIterator[bytes], max_bytes: int
) -> tuple[dict[str, Any], UploadedAudio | None]:
    pairs: list[tuple[str, str]] = []
    upload: UploadedAudio | None = None
    part: FilePart | None = None
    buffer = bytearray()
    async for event in MultipartReader(content_type, body).events():
        if isinstance(event, FormField):
            pairs.append((event.name, event.value))
        elif isinstance(event, FilePart):
            if event.name == "file" and upload is not None:
                raise BadRequest("the body has more than one `file` part", code="invalid_multipart")
            part = event if event.name == "file" else None  # other file parts are skipped
        elif event is FILE_END:
            if part is not None:
                upload = UploadedAudio(bytes(buffer), part.filename, part.content_type)
            part = None
            buffer.clear()
        elif part is not None:
            assert isinstance(event, bytes)
            buffer += event
            if len(buffer) > max_bytes:
                raise audio_too_large(max_bytes)
    return _collect(pairs), upload


async def read_body(
    content_type: str | None,
    content_length: int | None,
    body: AsyncIterator[bytes],
    max_bytes: int,
) -> tuple[TranscriptionForm, UploadedAudio | None]:
    """The request's fields and its uploaded audio (None without a `file` part)."""
    media = parse_options_header(content_type or "")[0].decode("latin-1").lower()
    if media == "multipart/form-data":
        if content_length is not None and content_length > max_bytes + FRAMING_SLACK:
            raise audio_too_large(max_bytes)
        fields, upload = await _multipart(content_type or "", body, max_bytes)
        return parse_form(fields), upload
    if media == "application/x-www-form-urlencoded":
        raw = await _read_fields(body, max_bytes)
        try:
            pairs = parse_qsl(
                raw.decode("utf-8"),
                keep_blank_values=True,
                strict_parsing=False,
                max_num_fields=1000,
            )
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadRequest(f"malformed form body: {exc}", code="invalid_form") from exc
        return parse_form(_collect(pairs)), None
    if media == "application/json":
        raw = await _read_fields(body, max_bytes)
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"malformed JSON body: {exc}", code="invalid_json") from exc
        if not isinstance(document, dict):
            raise BadRequest("the JSON body must be an object", code="invalid_json")
        return parse_form(document), None
    raise UnsupportedMediaType(
        "send multipart/form-data (with a `file` part), application/x-www-form-urlencoded "
        "(with `file_url` or `file_id`) or application/json",
        code="unsupported_media_type",
    )
