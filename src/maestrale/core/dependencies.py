"""FastAPI access to the kit's long-lived objects: the database, blob storage and the server's
secret (which signs URLs). Each dependency reads one attribute of the app's services, so that a
handler names what it uses and never the whole bag; `ReleasingBlobs` is the blob store bound to
the request's unit of work."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from maestrale.core.app_services import app_services
from maestrale.core.blobs import BlobStore, ReleasingBlobStore
from maestrale.core.db import Database
from maestrale.core.routing import Work


async def get_db(connection: HTTPConnection) -> Database:
    db: Database = app_services(connection).db
    return db


async def get_blobs(connection: HTTPConnection) -> BlobStore:
    blobs: BlobStore = app_services(connection).blobs
    return blobs


async def get_secret_key(connection: HTTPConnection) -> bytes:
    secret: bytes = app_services(connection).secret_key
    return secret


Db = Annotated[Database, Depends(get_db)]
Blobs = Annotated[BlobStore, Depends(get_blobs)]
SecretKey = Annotated[bytes, Depends(get_secret_key)]


async def get_releasing_blobs(blobs: Blobs, db: Db, work: Work) -> BlobStore:
    """The blob store, ending the request's transaction before each read or write."""
    return ReleasingBlobStore(blobs, work.release, db)


ReleasingBlobs = Annotated[BlobStore, Depends(get_releasing_blobs)]
