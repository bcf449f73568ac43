"""An OpenAI-compatible images API: `POST {base}/images/generations` with `model`, `prompt`,
`n`=1, `size` and `response_format="b64_json"`, answering `{"data": [{"b64_json" | "url",
"revised_prompt"?}]}`. An image answered as a `url` is downloaded through the SSRF-safe fetcher
(the upstream is configuration, the URL it answers is not)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from maestrale.core.errors import AppError
from maestrale.core.fetch import FetchPolicy, fetch_url
from maestrale.tools.web.upstream import UpstreamError, request_json

if TYPE_CHECKING:
    from maestrale.config import Settings

LABEL = "the images upstream"
# The JSON around the image's base64 text.
_ENVELOPE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Generated:
    data: bytes
    revised_prompt: str | None


def missing_setting(settings: Settings) -> str | None:
    """What is missing for the upstream to be called, naming the setting; None when nothing."""
    if not settings.image_generation_url:
        return (
            "no images upstream is configured: set MAESTRALE_IMAGE_GENERATION_URL (the base URL "
            "of an OpenAI-compatible images API) and MAESTRALE_IMAGE_GENERATION_MODEL"
        )
    if not settings.image_generation_model:
        return "no image model is configured: set MAESTRALE_IMAGE_GENERATION_MODEL"
    name = settings.image_generation_api_key_env
    if name and not os.environ.get(name):
        return (
            f"MAESTRALE_IMAGE_GENERATION_API_KEY_ENV names {name[:100]!r}, which is not set in "
            "the server's environment"
        )
    return None


async def generate(settings: Settings, prompt: str, size: str) -> Generated:
    """One image for `prompt`, within `image_generation_timeout_seconds` (download included).
    Raises UpstreamError."""
    timeout = settings.image_generation_timeout_seconds
    try:
        async with asyncio.timeout(timeout):
            return await _generate(settings, prompt, size, timeout)
    except TimeoutError as exc:
        raise UpstreamError(f"{LABEL} gave no image within {timeout:g} s") from exc


async def _generate(settings: Settings, prompt: str, size: str, timeout: float) -> Generated:
    url, model = settings.image_generation_url, settings.image_generation_model
    if not url or not model:
        raise UpstreamError(missing_setting(settings) or "no images upstream is configured")
    name = settings.image_generation_api_key_env
    key = os.environ.get(name) if name else None
    max_bytes = settings.image_generation_max_bytes
    answer = await request_json(
        "POST",
        url.rstrip("/") + "/images/generations",
        label=LABEL,
        body={
            "model": model,
            "prompt": prompt,
            "n": 1,
            "size": size,
            "response_format": "b64_json",
        },
        headers={"Authorization": f"Bearer {key}"} if key else None,
        secret=key,
        timeout=timeout,
        max_bytes=max_bytes * 4 // 3 + _ENVELOPE_BYTES,
    )
    items = answer.get("data") if isinstance(answer, dict) else None
    item = items[0] if isinstance(items, list) and items else None
    if not isinstance(item, dict):
        raise UpstreamError(f"{LABEL} answered no image (no `data` item)")
    revised = item.get("revised_prompt")
    revised = revised[:4000] if isinstance(revised, str) and revised.strip() else None
    encoded, location = item.get("b64_json"), item.get("url")
    if isinstance(encoded, str) and encoded:
        return Generated(_decode(encoded, max_bytes), revised)
    if isinstance(location, str) and location:
        policy = FetchPolicy(
            allow_private=settings.image_generation_allow_private,
            max_bytes=max_bytes,
            timeout_seconds=timeout,
        )
        try:
            fetched = await fetch_url(location, policy)
        except AppError as exc:
            raise UpstreamError(
                f"the image {LABEL} pointed at was not fetched: {exc.message}"
            ) from exc
        return Generated(fetched.content, revised)
    raise UpstreamError(f"{LABEL} answered neither `b64_json` nor `url`")


def _decode(encoded: str, max_bytes: int) -> bytes:
    text = "".join(encoded.split())
    if len(text) > max_bytes * 4 // 3 + 4:
        raise UpstreamError(f"{LABEL} answered an image over {max_bytes} bytes")
    try:
        data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UpstreamError(f"{LABEL} answered a `b64_json` that is not base64") from exc
    if len(data) > max_bytes:
        raise UpstreamError(f"{LABEL} answered an image over {max_bytes} bytes")
    return data
