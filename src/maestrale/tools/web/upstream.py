"""JSON from an upstream the operator configured (the search backend, the images API).

Unlike a URL that a client or a model names, such an upstream is configuration and may sit on a
private network, so it is reached without the SSRF guard of `core.fetch`. Its answer is still
read under a byte limit and the whole exchange under a time limit, and a hostile answer (huge,
nested past orjson's depth limit, not JSON, dripping slowly) is an `UpstreamError`, never a crash.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson
from yarl import URL

from maestrale.engines.openai_compat.pool import env_proxy
from maestrale.tracing import inject

# How much of an error answer is read to find its message, and how much of that is reported.
_ERROR_BODY_BYTES = 64 * 1024
_ERROR_DETAIL_CHARS = 300
_MAX_REDIRECTS = 3


class UpstreamError(Exception):
    """Why an exchange with an upstream failed, in words a model and an operator can read."""


async def request_json(
    method: str,
    url: str,
    *,
    label: str,
    timeout: float,
    max_bytes: int,
    params: Mapping[str, str] | None = None,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    secret: str | None = None,
) -> Any:
    """The JSON answer of `method url` (a GET follows a few redirects, a POST none).

    `label` names the upstream in errors ("the search backend"); `secret` (an API key sent in
    `headers`) is scrubbed from any text of the upstream that an error repeats."""
    data = orjson.dumps(body) if body is not None else None
    send_headers = {"Accept": "application/json", **(headers or {})}
    if data is not None:
        send_headers["Content-Type"] = "application/json"
    inject(send_headers)  # the caller's trace and trigger depth, when any
    try:
        target = URL(url)
        proxy, proxy_auth = env_proxy(target)
        async with asyncio.timeout(timeout):
            async with (
                aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=timeout), trust_env=False
                ) as session,
                session.request(
                    method,
                    target,
                    params=params,
                    data=data,
                    headers=send_headers,
                    proxy=proxy,
                    proxy_auth=proxy_auth,
                    allow_redirects=method == "GET",
                    max_redirects=_MAX_REDIRECTS,
                ) as response,
            ):
                if response.status >= 400:
                    detail = _scrub(await _error_detail(response), secret)
                    suffix = f": {detail[:_ERROR_DETAIL_CHARS]}" if detail else ""
                    raise UpstreamError(f"{label} answered HTTP {response.status}{suffix}")
                if response.status >= 300:
                    raise UpstreamError(f"{label} answered HTTP {response.status} (not followed)")
                raw = await _read(response, max_bytes, label)
    except UpstreamError:
        raise
    except TimeoutError as exc:
        raise UpstreamError(f"{label} did not answer within {timeout:g} s") from exc
    except aiohttp.TooManyRedirects as exc:
        raise UpstreamError(f"{label} redirected more than {_MAX_REDIRECTS} times") from exc
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        raise UpstreamError(f"{label} cannot be reached: {type(exc).__name__}") from exc
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError(f"{label} answered something that is not JSON (or too deep)") from exc


async def _read(response: aiohttp.ClientResponse, max_bytes: int, label: str) -> bytes:
    declared = response.content_length
    if declared is not None and declared > max_bytes:
        raise UpstreamError(f"{label} answered more than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > max_bytes:
            raise UpstreamError(f"{label} answered more than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _error_detail(response: aiohttp.ClientResponse) -> str:
    """The message of an error answer (OpenAI's `error.message`, `detail`, `message`, or its
    text), on one line; empty when there is none."""
    try:
        raw = await response.content.read(_ERROR_BODY_BYTES)
    except (aiohttp.ClientError, OSError):
        return ""
    text = raw.decode("utf-8", "replace")
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        for candidate in (parsed.get("error"), parsed.get("detail"), parsed.get("message")):
            if isinstance(candidate, dict):
                candidate = candidate.get("message")
            if isinstance(candidate, str) and candidate.strip():
                text = candidate
                break
    text = " ".join(text.split())
    return "".join(ch for ch in text if ch.isprintable())


def _scrub(text: str, secret: str | None) -> str:
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    return text
