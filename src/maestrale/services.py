"""What background jobs need besides the database: the settings, blob storage and the gateway
(model calls, accounted like any other). `serve` builds them in its lifespan; `maestrale worker`
builds the same with `open_services`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from maestrale.accounting.recorder import Recorder
from maestrale.catalog.config import load_catalog
from maestrale.completions.gateway import Gateway
from maestrale.config import Settings
from maestrale.core.blobs import BlobStore, LocalBlobStore
from maestrale.core.db import Database
from maestrale.engines.registry import EngineRegistry


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    db: Database
    blobs: BlobStore
    gateway: Gateway


def make_blob_store(settings: Settings) -> BlobStore:
    """The configured blob backend: a local directory, or an S3-compatible bucket."""
    if settings.blob_backend == "s3":
        if not settings.s3_bucket:
            raise ValueError("MAESTRALE_S3_BUCKET is required with MAESTRALE_BLOB_BACKEND=s3")
        from maestrale.core.blobs_s3 import S3BlobStore

        return S3BlobStore(
            settings.s3_bucket,
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            prefix=settings.s3_prefix,
        )
    return LocalBlobStore(settings.resolved_blob_dir)


@asynccontextmanager
async def open_services(settings: Settings, db: Database) -> AsyncIterator[Services]:
    """Engines, limits, accounting and blobs for a worker process, as `serve` has them (a batch
    line counts against the same limits as a live call); accounting is flushed on exit."""
    from maestrale.limits.setup import build_limits, redis_client

    engines = EngineRegistry(load_catalog(settings.models))
    recorder = Recorder(db, interval=settings.accounting_flush_seconds)
    redis = redis_client(settings.redis_url)
    limits = build_limits(settings, db, redis)
    gateway = Gateway(engines, recorder, db, hooks=[limits.hook])
    recorder.start()
    try:
        yield Services(settings, db, make_blob_store(settings), gateway)
    finally:
        await recorder.close()
        await engines.aclose()
        if redis is not None:
            with contextlib.suppress(Exception):
                await redis.aclose()
