"""Executors: one non-streamed call of an endpoint, from its JSON body to its response body,
validated, limited, accounted and answered exactly as the live endpoint would (an AppError for
the status and body it would have answered). Batch lines run them; each domain that serves such
an endpoint defines its executor, and batch lists them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from maestrale.config import Settings
from maestrale.core.blobs import BlobStore
from maestrale.core.db import Database
from maestrale.gateway.capabilities import Capability
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

# (gateway, caller, body, correlation_id, source, extra event fields) → response body.
Executor = Callable[
    [Gateway, Caller, dict[str, Any], str, str, Mapping[str, Any]], Awaitable[dict[str, Any]]
]


class ExecutorServices(Protocol):
    """What an executor that reads uploaded files or stores what it makes (a transcription, an
    OCR) reads of the process's services."""

    @property
    def db(self) -> Database: ...

    @property
    def blobs(self) -> BlobStore: ...

    @property
    def gateway(self) -> Gateway: ...

    @property
    def settings(self) -> Settings: ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An endpoint that can run without HTTP: the capability its model needs, and its executor."""

    capability: Capability[object]
    run: Executor
