"""The settings of outages and shutdown: how long the database, Redis and readiness checks may
take before a request gets a 503, the `Retry-After` it carries, and the grace of a SIGTERM.
`Settings` inherits them."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class OutageSettings(BaseSettings):
    database_connect_timeout: float = Field(
        default=5.0, gt=0, description="seconds a new database connection may take (then 503)"
    )
    database_pool_timeout: float = Field(
        default=10.0,
        gt=0,
        description="seconds a request waits for a free pooled connection (then 503)",
    )
    database_statement_timeout: float | None = Field(
        default=60.0,
        gt=0,
        description="seconds a statement may go unanswered before its connection is dropped"
        " (Postgres; a database cut off the network; then 503); unset: no bound",
    )
    unavailable_retry_after: int = Field(
        default=5,
        ge=1,
        le=3600,
        description="the Retry-After (seconds) of a 503 when the database cannot be reached",
    )
    ready_check_timeout: float = Field(
        default=1.0, gt=0, le=60, description="seconds each check of /ready may take"
    )
    redis_timeout: float = Field(
        default=1.0,
        gt=0,
        description="seconds a Redis connection or command may take (then limits fail closed"
        " or open, see limits_fail_open)",
    )
    shutdown_grace_seconds: float = Field(
        default=10.0,
        ge=0,
        description="at SIGTERM, seconds in-flight requests and streams have to finish",
    )
    shutdown_drain_seconds: float = Field(
        default=2.0,
        ge=0,
        description="at SIGTERM, seconds the server still accepts connections while /health and"
        " /ready answer 503 draining (a load balancer's checks take it out), within the grace;"
        " SIGINT (Ctrl-C) skips it",
    )
