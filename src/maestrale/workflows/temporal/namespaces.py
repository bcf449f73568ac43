"""The one connection of a process to the Temporal frontend, and the namespace of each workspace.

Work is partitioned by namespace: a workspace's executions, task queues, schedules and
visibility live in `<temporal_namespace>-<workspace id>`, created on first use with the search
attributes the official worker needs. Temporal keeps everything of a namespace apart from every
other, so two workspaces' deployments of the same name, or executions of the same id, never meet.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from maestrale.workflows.errors import engine_failed

log = logging.getLogger("maestrale.workflows.temporal")

# What the official `mistralai-workflows` worker upserts or the platform filters on. Without
# `OtelTraceId` every workflow task fails with BadSearchAttributes. `TemporalScheduledById`, which
# the worker reads, is a system attribute of the server: registering it would fail.
SEARCH_ATTRIBUTES = (
    "OtelTraceId",
    "WorkflowName",
    "UserId",
    "CustomerId",
    "WorkspaceId",
    "OrganizationId",
    "AllowAutoRemove",
    "CustomSearchAttributes",
)
RETENTION_SECONDS = 7 * 24 * 3600  # closed executions stay listable this long
READY_TIMEOUT = 30.0


def workspace_namespace(prefix: str, workspace_id: str) -> str:
    """The Temporal namespace of a workspace."""
    return f"{prefix}-{workspace_id}"


class Connection:
    """The process's service client (connected on first use) and the namespaces it has made
    sure of, with their ids (task tokens name a namespace by id)."""

    def __init__(self, address: str, *, tls: bool, api_key: str | None) -> None:
        self.address = address
        self.tls = tls
        self.api_key = api_key
        self._client: Any = None
        self._lock = asyncio.Lock()
        self._ids: dict[str, str] = {}
        self._clients: dict[str, Any] = {}
        self._ensuring = asyncio.Lock()

    async def root(self) -> Any:
        """A `temporalio` client over the shared connection (its namespace is never used)."""
        if self._client is not None:
            return self._client
        async with self._lock:
            if self._client is None:
                self._client = await self._connect()
        return self._client

    async def _connect(self) -> Any:
        try:
            from temporalio.client import Client
        except ImportError as exc:
            raise engine_failed(
                "workflows need the Temporal client: install maestrale[workflows]",
                status_code=503,
            ) from exc
        try:
            return await Client.connect(
                self.address, namespace="default", tls=self.tls, api_key=self.api_key
            )
        except Exception as exc:
            log.warning("cannot reach Temporal at %s: %s", self.address, exc)
            raise engine_failed(
                f"the workflow engine (Temporal at {self.address}) is unreachable",
                status_code=503,
            ) from exc

    async def client(self, namespace: str) -> Any:
        """A client bound to `namespace`, which exists once this returns."""
        found = self._clients.get(namespace)
        if found is not None:
            return found
        from temporalio.client import Client

        root = await self.root()
        await self.namespace_id(namespace)
        client = self._clients.setdefault(
            namespace, Client(root.service_client, namespace=namespace)
        )
        return client

    async def namespace_id(self, namespace: str) -> str:
        """The id of `namespace`, registered (with its search attributes) if it is new."""
        known = self._ids.get(namespace)
        if known is not None:
            return known
        async with self._ensuring:  # rare (once per workspace and process): one at a time
            known = self._ids.get(namespace)
            if known is None:
                try:
                    known = await self._ensure(namespace)
                except Exception as exc:
                    from temporalio.service import RPCError

                    if isinstance(exc, RPCError):
                        log.warning("cannot prepare namespace %s: %s", namespace, exc)
                        raise engine_failed(
                            f"the workflow engine could not prepare the workspace's namespace:"
                            f" {exc.message}",
                            status_code=503,
                        ) from exc
                    raise
                self._ids[namespace] = known
        return known

    async def _ensure(self, namespace: str) -> str:
        from google.protobuf.duration_pb2 import Duration
        from temporalio.api.enums.v1 import IndexedValueType
        from temporalio.api.operatorservice.v1 import (
            AddSearchAttributesRequest,
            ListSearchAttributesRequest,
        )
        from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
        from temporalio.service import RPCError, RPCStatusCode

        root = await self.root()
        service = root.service_client
        try:
            await service.workflow_service.register_namespace(
                RegisterNamespaceRequest(
                    namespace=namespace,
                    workflow_execution_retention_period=Duration(seconds=RETENTION_SECONDS),
                    description="a Maestrale workspace",
                ),
                retry=True,
            )
            log.info("registered the Temporal namespace %s", namespace)
        except RPCError as exc:
            if exc.status != RPCStatusCode.ALREADY_EXISTS:
                raise
        # A namespace just registered can take a moment to reach every service's cache.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READY_TIMEOUT
        while True:
            try:
                found = await service.operator_service.list_search_attributes(
                    ListSearchAttributesRequest(namespace=namespace)
                )
                missing = [n for n in SEARCH_ATTRIBUTES if n not in found.custom_attributes]
                if missing:
                    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
                    await service.operator_service.add_search_attributes(
                        AddSearchAttributesRequest(
                            namespace=namespace, search_attributes=dict.fromkeys(missing, keyword)
                        )
                    )
                    continue
                described = await root.workflow_service.describe_namespace(_describe(namespace))
                return str(described.namespace_info.id)
            except RPCError as exc:
                retriable = exc.status in (
                    RPCStatusCode.NOT_FOUND,
                    RPCStatusCode.UNAVAILABLE,
                    RPCStatusCode.ALREADY_EXISTS,  # another process added them meanwhile
                )
                if not retriable or loop.time() > deadline:
                    raise
            await asyncio.sleep(0.1)


def _describe(namespace: str) -> Any:
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest

    return DescribeNamespaceRequest(namespace=namespace)
