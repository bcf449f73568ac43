"""The pooled HTTP client of one upstream: JSON calls and SSE streams, retries, error mapping."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from types import MappingProxyType
from typing import Any

import aiohttp
import orjson
from aiohttp.http_exceptions import HttpProcessingError
from yarl import URL

from maestrale.engines.openai_compat import pool
from maestrale.engines.openai_compat.options import UpstreamConfig
from maestrale.engines.openai_compat.sse import SSEParser
from maestrale.engines.openai_compat.wire import error_message, loads
from maestrale.engines.types import EngineError
from maestrale.tracing import outbound_headers

log = logging.getLogger("maestrale.engines.openai_compat")

DONE = b"[DONE]"
RETRY_STATUSES = frozenset({502, 503, 504})
# A 429 is worth waiting for only when the upstream promises a slot this soon (seconds).
MAX_RETRY_AFTER = 2.0
_STREAM_HEADERS = MappingProxyType({"accept": "text/event-stream"})
# What a failed exchange with the upstream raises (timeouts, an OSError too, are caught first).
_TRANSPORT_ERRORS = (aiohttp.ClientError, HttpProcessingError, OSError)
# Failures that happen before an upstream answer could have reached our client, so another
# attempt is invisible to it: refused or dropped connections (a stale keep-alive one included),
# and answers cut or garbled on the wire.
_RETRYABLE_TRANSPORT = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    aiohttp.ClientResponseError,
    HttpProcessingError,
    OSError,
)
# The smallest time budget passed to aiohttp: it takes zero for "no limit".
_MIN_BUDGET = 0.001


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


def _detail(exc: BaseException) -> str:
    """What went wrong, without the upstream's address (aiohttp puts it in its messages)."""
    cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    if isinstance(cause, socket.gaierror):
        return "name resolution failed"
    if isinstance(cause, OSError) and cause.errno:
        return os.strerror(cause.errno)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return type(exc).__name__
    return str(exc) or type(exc).__name__


def _transport_failure(exc: BaseException) -> _Retry | EngineError:
    # The upstream URL stays out of the message: it goes to the client; the log has it.
    detail = _detail(exc)
    if isinstance(exc, aiohttp.ClientConnectorError):
        error = EngineError(502, f"upstream unreachable: {detail}", code="upstream_unreachable")
    else:
        error = EngineError(502, f"upstream connection failed: {detail}", code="upstream_error")
    return _Retry(error) if isinstance(exc, _RETRYABLE_TRANSPORT) else error


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: always further away than we would wait
    return seconds if 0 <= seconds <= MAX_RETRY_AFTER else None


def _status_failure(
    status: int, headers: Mapping[str, str], content: bytes
) -> _Retry | EngineError:
    message = error_message(content, status)
    if status >= 500:
        message = f"upstream returned HTTP {status}: {message}"
    error = EngineError(status, message, code="upstream_error")
    wait = _retry_after(headers)
    if status in RETRY_STATUSES or (status == 429 and wait is not None):
        return _Retry(error, wait)
    return error


class UpstreamClient:
    """One keep-alive connection pool to an OpenAI-compatible server, shared by its models.

    Calls are retried only while nothing of the answer has been passed on: on refused or dropped
    connections, on 502/503/504, and on 429 when Retry-After is at most 2 s; with exponential
    backoff, within the call's total time budget (`timeout`).

    The aiohttp session is created on first use, inside the running event loop (the client may
    be built outside one), and closed by `aclose`.
    """

    def __init__(self, config: UpstreamConfig) -> None:
        options = config.options
        self._options = options
        self._base = config.base_url.rstrip("/")
        # The server's own root, where vLLM serves what is not OpenAI's API (`/tokenize`).
        self._root = self._base.removesuffix("/v1")
        base = URL(self._base)
        # For logs: the base URL without any user:password part.
        self._where = str(base.with_user(None))
        self._timeout = options.timeout
        self._connect_timeout = options.connect_timeout
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
        self._headers = headers
        self._proxy, self._proxy_auth = pool.env_proxy(base)
        self._urls: dict[str, URL] = {}
        self._http: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            self._http = pool.session(self._options, self._headers)
            self._loop = loop
        return self._http

    def _url(self, path: str, *, root: bool = False) -> URL:
        key = f"root:{path}" if root else path
        url = self._urls.get(key)
        if url is None:
            url = self._urls[key] = URL((self._root if root else self._base) + path)
        return url

    def _budget(self, deadline: float) -> aiohttp.ClientTimeout:
        """The time left until `deadline`, for all of one attempt (connect, send, read)."""
        left = max(deadline - asyncio.get_running_loop().time(), _MIN_BUDGET)
        return aiohttp.ClientTimeout(total=left, connect=min(self._connect_timeout, left))

    def _request(
        self, url: URL, payload: bytes, deadline: float, headers: Mapping[str, str] | None = None
    ) -> Any:
        return self._session().post(
            url,
            data=payload,
            headers=outbound_headers(headers),  # the caller's trace, when traced
            timeout=self._budget(deadline),
            allow_redirects=False,
            proxy=self._proxy,
            proxy_auth=self._proxy_auth,
        )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        http, self._http, self._loop = self._http, None, None
        if http is not None:
            await http.close()

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

    async def post_json(self, path: str, body: dict[str, Any], *, root: bool = False) -> Any:
        """POST `body` to `path` and return the parsed JSON answer; raise `EngineError`.
        `root`: `path` is from the server's root (the base URL without its `/v1`)."""
        return await self.post(path, orjson.dumps(body), root=root)

    async def post(
        self,
        path: str,
        payload: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        root: bool = False,
    ) -> Any:
        """POST a ready body (JSON unless `headers` say otherwise: multipart, ...) to `path`,
        retried on transient failures; return the parsed JSON answer or raise `EngineError`.
        `root` as for `post_json`."""
        url = self._url(path, root=root)
        deadline = asyncio.get_running_loop().time() + self._timeout
        attempt = 0
        while True:
            try:
                async with self._request(url, payload, deadline, headers) as response:
                    content = await response.read()
            except TimeoutError:
                raise timeout_error() from None
            except _TRANSPORT_ERRORS as exc:
                failure = _transport_failure(exc)
            else:
                if response.status < 400:
                    return loads(content)
                failure = _status_failure(response.status, response.headers, content)
            await self._retry_or_raise(failure, attempt, deadline, path)
            attempt += 1

    async def _retry_or_raise(
        self, failure: _Retry | EngineError, attempt: int, deadline: float, path: str
    ) -> None:
        """Wait before the next attempt, or raise when the failure is final or time is up."""
        if isinstance(failure, EngineError):
            raise failure
        wait = self._wait(failure, attempt, deadline, path)
        if wait is None:
            raise failure.error
        await asyncio.sleep(wait)

    async def stream_body(
        self, path: str, body: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> AsyncGenerator[bytes, None]:
        """POST `body` (with `headers` over the defaults) and yield the raw bytes of the answer
        as they arrive (audio, ...).

        Retried as `post` until the first bytes are passed on; a break after that is
        `interrupted_error`. Closing the generator closes the upstream response."""
        async for chunk in self._streamed(path, body, headers, _raw, retry_empty=False):
            yield chunk

    async def stream(self, path: str, body: dict[str, Any]) -> AsyncGenerator[bytes, None]:
        """POST `body` and yield the `data` payloads of the SSE answer as they arrive.

        `[DONE]` is yielded too, and the rest of the body is still read after it so that the
        connection goes back to the pool. Closing the generator closes the upstream response.
        """
        async for data in self._streamed(path, body, _STREAM_HEADERS, _sse, retry_empty=True):
            yield data

    async def _streamed(
        self,
        path: str,
        body: dict[str, Any],
        headers: Mapping[str, str] | None,
        items: Callable[[Any], AsyncIterator[bytes]],
        *,
        retry_empty: bool,
    ) -> AsyncGenerator[bytes, None]:
        """POST `body` and yield the `items` read from the answer's body as they arrive,
        retried as `post` until the first item is passed on (and, with `retry_empty`, when the
        answer had none); a break after that is `interrupted_error`."""
        url = self._url(path)
        payload = orjson.dumps(body)
        deadline = asyncio.get_running_loop().time() + self._timeout
        attempt = 0
        while True:
            started = False
            failure: _Retry | EngineError
            try:
                # The time budget covers every read, but a timeout that expires while our
                # consumer works is raised at the next read only, never into the consumer.
                async with self._request(url, payload, deadline, headers) as response:
                    try:
                        if response.status >= 400:
                            content = await response.read()
                            failure = _status_failure(response.status, response.headers, content)
                        else:
                            async for item in items(response):
                                started = True
                                yield item
                            if started or not retry_empty:
                                return
                            failure = _Retry(_empty_stream_error())
                    finally:
                        # Stopped early (consumer gone, error): drop the connection at once
                        # rather than read the rest of an answer nobody wants.
                        if not response.content.is_eof():
                            response.close()
            except TimeoutError:
                raise timeout_error() from None
            except _TRANSPORT_ERRORS as exc:
                if started:
                    raise interrupted_error() from None
                failure = _transport_failure(exc)
            await self._retry_or_raise(failure, attempt, deadline, path)
            attempt += 1


async def _raw(response: Any) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive."""
    while chunk := await response.content.readany():
        yield chunk


async def _sse(response: Any) -> AsyncIterator[bytes]:
    """The `data` payloads of an SSE body as they arrive."""
    parser = SSEParser()
    while chunk := await response.content.readany():
        for data in parser.feed(chunk):
            yield data
    for data in parser.close():
        yield data
