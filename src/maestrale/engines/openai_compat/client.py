"""The pooled HTTP client of one upstream: JSON calls and SSE streams, retries, error mapping."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from types import MappingProxyType
from typing import Any

import httpx
import orjson

from maestrale.engines.openai_compat.options import UpstreamConfig
from maestrale.engines.openai_compat.sse import SSEParser
from maestrale.engines.openai_compat.wire import error_message, loads
from maestrale.engines.types import EngineError

log = logging.getLogger("maestrale.engines.openai_compat")

DONE = b"[DONE]"
RETRY_STATUSES = frozenset({502, 503, 504})
# A 429 is worth waiting for only when the upstream promises a slot this soon (seconds).
MAX_RETRY_AFTER = 2.0
_STREAM_HEADERS = MappingProxyType({"accept": "text/event-stream"})
# Failures that happen before an upstream answer could have reached our client, so another
# attempt is invisible to it: refused or dropped connections (a stale keep-alive one included).
_RETRYABLE_TRANSPORT = (
    httpx.ConnectError,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)


class _Retry(Exception):
    """An attempt failed in a way another attempt may fix; `error` is raised if none is left."""

    def __init__(self, error: EngineError, wait: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.wait = wait


def timeout_error() -> EngineError:
    """The error of an upstream call that ran out of time."""
    return EngineError(504, "upstream timed out", code="upstream_timeout")


def interrupted_error() -> EngineError:
    """The error of a stream that broke after some of it was passed on (never retried)."""
    return EngineError(502, "upstream stream interrupted", code="upstream_error")


def _empty_stream_error() -> EngineError:
    return EngineError(502, "upstream closed the stream without data", code="upstream_error")


def _transport_failure(exc: httpx.TransportError) -> _Retry | EngineError:
    if isinstance(exc, httpx.TimeoutException):
        return timeout_error()
    # The upstream URL stays out of the message: it goes to the client; the log has it.
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        error = EngineError(502, f"upstream unreachable: {detail}", code="upstream_unreachable")
    else:
        error = EngineError(502, f"upstream connection failed: {detail}", code="upstream_error")
    return _Retry(error) if isinstance(exc, _RETRYABLE_TRANSPORT) else error


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: always further away than we would wait
    return seconds if 0 <= seconds <= MAX_RETRY_AFTER else None


def _status_failure(response: httpx.Response) -> _Retry | EngineError:
    status = response.status_code
    message = error_message(response.content, status)
    if status >= 500:
        message = f"upstream returned HTTP {status}: {message}"
    error = EngineError(status, message, code="upstream_error")
    wait = _retry_after(response)
    if status in RETRY_STATUSES or (status == 429 and wait is not None):
        return _Retry(error, wait)
    return error


class UpstreamClient:
    """One keep-alive connection pool to an OpenAI-compatible server, shared by its models.

    Calls are retried only while nothing of the answer has been passed on: on refused or dropped
    connections, on 502/503/504, and on 429 when Retry-After is at most 2 s; with exponential
    backoff, within the call's total time budget (`timeout`).
    """

    def __init__(self, config: UpstreamConfig) -> None:
        options = config.options
        self._base = config.base_url.rstrip("/")
        # For logs: the base URL without any user:password part.
        self._where = str(httpx.URL(self._base).copy_with(userinfo=b""))
        self._timeout = options.timeout
        self._retries = options.retries
        self._backoff = options.retry_backoff
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": "maestrale",
            **options.headers,
        }
        if config.api_key:
            headers["authorization"] = f"Bearer {config.api_key}"
        keepalive = options.max_keepalive_connections
        self._http = httpx.AsyncClient(
            headers=headers,
            # Per-operation limits; the total budget is enforced around each call below.
            timeout=httpx.Timeout(options.timeout, connect=options.connect_timeout),
            limits=httpx.Limits(
                max_connections=options.max_connections,
                max_keepalive_connections=(
                    options.max_connections if keepalive is None else keepalive
                ),
            ),
        )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._http.aclose()

    def _wait(self, failure: _Retry, attempt: int, deadline: float, path: str) -> float | None:
        """How long to wait before the next attempt, or None when there is to be none."""
        if attempt >= self._retries:
            return None
        wait = self._backoff * (1 << attempt)
        if failure.wait is not None:
            wait = max(wait, failure.wait)
        if asyncio.get_running_loop().time() + wait >= deadline:
            return None
        log.warning(
            "upstream %s%s failed (%s); retry %d of %d in %.2f s",
            self._where,
            path,
            failure.error.message,
            attempt + 1,
            self._retries,
            wait,
        )
        return wait

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """POST `body` to `path` and return the parsed JSON answer; raise `EngineError`."""
        url = self._base + path
        payload = orjson.dumps(body)
        deadline = asyncio.get_running_loop().time() + self._timeout
        attempt = 0
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    response = await self._http.post(url, content=payload)
            except TimeoutError:
                raise timeout_error() from None
            except httpx.TransportError as exc:
                failure = _transport_failure(exc)
            else:
                if response.status_code < 400:
                    return loads(response.content)
                failure = _status_failure(response)
            if isinstance(failure, EngineError):
                raise failure
            wait = self._wait(failure, attempt, deadline, path)
            if wait is None:
                raise failure.error
            await asyncio.sleep(wait)
            attempt += 1

    async def stream(self, path: str, body: dict[str, Any]) -> AsyncGenerator[bytes, None]:
        """POST `body` and yield the `data` payloads of the SSE answer as they arrive.

        `[DONE]` is yielded too, and the rest of the body is still read after it so that the
        connection goes back to the pool. Closing the generator closes the upstream response.
        """
        url = self._base + path
        payload = orjson.dumps(body)
        deadline = asyncio.get_running_loop().time() + self._timeout
        attempt = 0
        while True:
            started = False
            failure: _Retry | EngineError
            try:
                async with contextlib.AsyncExitStack() as stack:
                    async with asyncio.timeout_at(deadline):
                        response = await stack.enter_async_context(
                            self._http.stream("POST", url, content=payload, headers=_STREAM_HEADERS)
                        )
                        if response.status_code >= 400:
                            await response.aread()
                    if response.status_code >= 400:
                        failure = _status_failure(response)
                    else:
                        parser = SSEParser()
                        chunks = response.aiter_bytes()
                        while True:
                            # The timeout scope wraps the read only: left open across the yield,
                            # it would cancel whatever our consumer happens to be doing.
                            async with asyncio.timeout_at(deadline):
                                chunk = await anext(chunks, None)
                            for data in parser.close() if chunk is None else parser.feed(chunk):
                                started = True
                                yield data
                            if chunk is None:
                                break
                        if started:
                            return
                        failure = _Retry(_empty_stream_error())
            except TimeoutError:
                raise timeout_error() from None
            except httpx.TransportError as exc:
                if started and not isinstance(exc, httpx.TimeoutException):
                    raise interrupted_error() from None
                failure = _transport_failure(exc)
            if isinstance(failure, EngineError):
                raise failure
            wait = self._wait(failure, attempt, deadline, path)
            if wait is None:
                raise failure.error
            await asyncio.sleep(wait)
            attempt += 1
