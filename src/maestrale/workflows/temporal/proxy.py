"""The Temporal frontend workers are given: an authenticating gRPC proxy in front of Temporal.

The official worker dials the `scheduler_url` of `workers/whoami` and sends its Maestrale key as
`authorization: Bearer <key>`. This proxy resolves the key as the HTTP API does (the same cache,
so a revoked key stops working here too), maps it to its workspace's namespace, lets through
only the calls `access.Rules` allows for that namespace, and forwards them byte for byte to the
real frontend, which no worker is ever told about. Long polls pass through with the caller's
deadline; Temporal's errors come back with their details (the SDKs read them).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc
from grpc import aio

from maestrale.workflows.temporal.access import AccessRefused, Grant, Rules
from maestrale.workflows.temporal.namespaces import workspace_namespace

if TYPE_CHECKING:
    from maestrale.core.auth.principal import Principal
    from maestrale.workflows.temporal.engine import TemporalEngine

log = logging.getLogger("maestrale.workflows.proxy")

# Temporal's own limit on a message; gRPC's default (4 MiB) would refuse large histories.
MAX_MESSAGE = 128 * 1024 * 1024
_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.max_send_message_length", MAX_MESSAGE),
)
# The SDKs ping every 30 s, also while only long polls are open; gRPC's server default (one ping
# in 5 minutes without data, then GOAWAY) would cut their connections. Temporal allows it too.
_SERVER_OPTIONS = (
    *_OPTIONS,
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 5000),
    ("grpc.http2.max_ping_strikes", 0),
)
# Towards Temporal: notice a frontend gone silent (long polls would hang on it until their end).
_CHANNEL_OPTIONS = (
    *_OPTIONS,
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 15_000),
    ("grpc.keepalive_permit_without_calls", 1),
)
# Request headers not passed on: the caller's credential (the frontend gets Maestrale's own),
# transport headers gRPC sets itself, and the namespace routing header (checked, see below).
_DROPPED = frozenset({"authorization", "user-agent", "te", "content-type", "temporal-namespace"})

# Resolves a key to the principal of a live key (None: unknown, revoked or expired).
KeyResolver = Callable[[str], Awaitable["Principal | None"]]


class _Denied(Exception):
    """A call refused before it is looked at: no live key, or no namespace to check it against."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class WorkerProxy:
    """The generic gRPC handler: authenticate, authorize, forward."""

    def __init__(self, engine: TemporalEngine, resolve: KeyResolver) -> None:
        self.engine = engine
        self.resolve = resolve
        self.rules = Rules()
        target = engine.target
        if target.tls:
            self.channel = aio.secure_channel(
                target.address, grpc.ssl_channel_credentials(), options=_CHANNEL_OPTIONS
            )
        else:
            self.channel = aio.insecure_channel(target.address, options=_CHANNEL_OPTIONS)
        self._upstream_auth = (
            (("authorization", f"Bearer {target.api_key}"),) if target.api_key else ()
        )
        self._stubs: dict[str, Any] = {}

    def handler(self) -> grpc.GenericRpcHandler:
        proxy = self

        class Handler(grpc.GenericRpcHandler):
            def service(
                self, details: grpc.HandlerCallDetails
            ) -> grpc.RpcMethodHandler[bytes, bytes] | None:
                method: str = details.method

                async def call(request: bytes, context: aio.ServicerContext[bytes, bytes]) -> bytes:
                    return await proxy.call(method, request, context)

                # Temporal's services are all unary; bytes in, bytes out.
                return grpc.unary_unary_rpc_method_handler(call)

        return Handler()

    async def call(
        self, method: str, request: bytes, context: aio.ServicerContext[bytes, bytes]
    ) -> bytes:
        metadata = tuple(context.invocation_metadata() or ())
        try:
            grant = await self._grant(metadata)
            self.rules.check(method, request, grant)
        except _Denied as exc:
            await context.abort(exc.code, exc.message)
        except AccessRefused as exc:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, exc.why)
        forwarded = [
            (k, v) for k, v in metadata if k not in _DROPPED and not k.startswith(("grpc-", ":"))
        ]
        forwarded.append(("temporal-namespace", grant.namespace))
        forwarded.extend(self._upstream_auth)
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._stubs.setdefault(method, self.channel.unary_unary(method))
        try:
            response: bytes = await stub(
                request, metadata=tuple(forwarded), timeout=context.time_remaining()
            )
        except aio.AioRpcError as exc:
            trailing = tuple(
                (k, v)
                for k, v in (exc.trailing_metadata() or ())
                if not k.startswith("grpc-") or k == "grpc-status-details-bin"
            )
            await context.abort(exc.code(), exc.details() or "", trailing)
        return response

    async def _grant(self, metadata: tuple[tuple[str, str | bytes], ...]) -> Grant:
        """The namespace the key the call presents opens; _Denied without a live key."""
        header = next((v for k, v in metadata if k == "authorization"), None)
        key = None
        if isinstance(header, str) and header[:7].lower() == "bearer ":
            key = header[7:].strip() or None
        if key is None:
            raise _Denied(
                grpc.StatusCode.UNAUTHENTICATED,
                "missing API key: the worker sends its Maestrale key (MISTRAL_API_KEY)",
            )
        principal = await self.resolve(key)
        if principal is None or principal.kind != "standard" or principal.workspace_id is None:
            raise _Denied(grpc.StatusCode.UNAUTHENTICATED, "invalid, expired or revoked API key")
        workspace = self.engine.for_workspace(principal.workspace_id)
        try:
            namespace_id = await workspace.connection.namespace_id(workspace.namespace)
        except Exception as exc:
            log.warning("worker proxy: namespace %s unavailable: %s", workspace.namespace, exc)
            raise _Denied(
                grpc.StatusCode.UNAVAILABLE, "the workflow engine is unavailable"
            ) from exc
        return Grant(workspace.namespace, namespace_id)

    async def close(self) -> None:
        await self.channel.close()


@contextlib.asynccontextmanager
async def serve_worker_proxy(
    engine: TemporalEngine, resolve: KeyResolver, host: str, port: int, *, shared: bool = False
) -> AsyncIterator[int]:
    """Serve the proxy on `host:port` (0: a free port) for the block; yields the bound port.
    `shared`: the processes of one `serve` all listen on the port (SO_REUSEPORT); otherwise a
    port another program holds is an error, not a port silently split with it."""
    proxy = WorkerProxy(engine, resolve)
    server = aio.server(options=(*_SERVER_OPTIONS, ("grpc.so_reuseport", int(shared))))
    server.add_generic_rpc_handlers((proxy.handler(),))
    try:
        bound = server.add_insecure_port(_join(host, port))
    except RuntimeError:
        bound = 0
    if bound == 0:
        await proxy.close()
        raise OSError(f"the worker proxy cannot listen on {_join(host, port)}")
    await server.start()
    log.info("Temporal worker proxy on %s", _join(host, bound))
    try:
        yield bound
    finally:
        await server.stop(grace=1.0)
        await proxy.close()


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


__all__ = ["KeyResolver", "WorkerProxy", "serve_worker_proxy", "workspace_namespace"]
