"""Blob storage on S3-compatible object stores (AWS S3, MinIO, Ceph, moto...).

boto3 is synchronous: every call runs on a worker thread, off the event loop. Writes are streamed
as a multipart upload, one part buffered at a time (`part_size`), and become visible only when
the upload completes, so a failed or oversized write stores nothing. Reads are ranged GETs
streamed in chunks. Credentials come from the standard AWS environment (AWS_ACCESS_KEY_ID, ...).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio

from maestrale.core.blobs import CHUNK, BlobTooLarge, check_key

MIN_PART = 5 * 1024 * 1024  # S3's floor for every part but the last


class S3BlobStore:
    """The BlobStore protocol on one bucket, under an optional key prefix."""

    def __init__(
        self,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        prefix: str = "",
        part_size: int = 8 * 1024 * 1024,
        client: Any = None,
    ) -> None:
        if part_size < MIN_PART:
            raise ValueError(f"part_size must be at least {MIN_PART} bytes")
        if client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise RuntimeError(
                    "the s3 blob backend needs boto3: pip install 'maestrale[s3]'"
                ) from exc
            config = Config(max_pool_connections=32, retries={"max_attempts": 3})
            client = boto3.client(
                "s3", endpoint_url=endpoint_url, region_name=region, config=config
            )
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.part_size = part_size

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    async def _call(self, method: str, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: getattr(self.client, method)(**kwargs))

    def _missing(self, exc: Exception) -> bool:
        response = getattr(exc, "response", None) or {}
        code = str(response.get("Error", {}).get("Code", ""))
        return code in ("404", "NoSuchKey", "NotFound")

    async def put(
        self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int | None = None
    ) -> int:
        """Stream `chunks` to the object `key`; one part of memory at a time."""
        name = self._key(key)
        pieces: list[bytes] = []  # the next part, as received (joined once, when full)
        pending = 0
        size = 0
        upload_id: str | None = None
        parts: list[dict[str, Any]] = []
        try:
            async for chunk in chunks:
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise BlobTooLarge(max_bytes)
                pieces.append(chunk)
                pending += len(chunk)
                while pending >= self.part_size:
                    if upload_id is None:
                        created = await self._call(
                            "create_multipart_upload", Bucket=self.bucket, Key=name
                        )
                        upload_id = str(created["UploadId"])
                    data = b"".join(pieces)
                    part, rest = data[: self.part_size], data[self.part_size :]
                    pieces, pending = ([rest] if rest else []), len(rest)
                    del data
                    number = len(parts) + 1
                    sent = await self._call(
                        "upload_part",
                        Bucket=self.bucket,
                        Key=name,
                        UploadId=upload_id,
                        PartNumber=number,
                        Body=part,
                    )
                    del part
                    parts.append({"ETag": sent["ETag"], "PartNumber": number})
            if upload_id is None:
                await self._call("put_object", Bucket=self.bucket, Key=name, Body=b"".join(pieces))
                return size
            if pieces:
                number = len(parts) + 1
                sent = await self._call(
                    "upload_part",
                    Bucket=self.bucket,
                    Key=name,
                    UploadId=upload_id,
                    PartNumber=number,
                    Body=b"".join(pieces),
                )
                parts.append({"ETag": sent["ETag"], "PartNumber": number})
            await self._call(
                "complete_multipart_upload",
                Bucket=self.bucket,
                Key=name,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
            )
            upload_id = None
            return size
        finally:
            if upload_id is not None:
                # Interrupted (too large, client gone, S3 error): drop the parts sent so far.
                # An unfinished upload is invisible either way; this frees its storage.
                with contextlib.suppress(Exception):
                    await self._call(
                        "abort_multipart_upload", Bucket=self.bucket, Key=name, UploadId=upload_id
                    )

    async def get(
        self, key: str, *, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream bytes `start`..`end` (exclusive) with one ranged GET; KeyError if absent."""
        name = self._key(key)
        if end is not None and end <= start:
            return
        ranged = {}
        if start or end is not None:
            ranged["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        try:
            response = await self._call("get_object", Bucket=self.bucket, Key=name, **ranged)
        except Exception as exc:
            if self._missing(exc):
                raise KeyError(key) from exc
            if "InvalidRange" in str(exc):  # start at or past the end: nothing to read
                return
            raise
        body = response["Body"]
        try:
            while True:
                chunk: bytes = await anyio.to_thread.run_sync(body.read, CHUNK)
                if not chunk:
                    break
                yield chunk
        finally:
            body.close()

    async def size(self, key: str) -> int | None:
        """The object's size, or None if it does not exist."""
        try:
            head = await self._call("head_object", Bucket=self.bucket, Key=self._key(key))
        except Exception as exc:
            if self._missing(exc):
                return None
            raise
        return int(head["ContentLength"])

    async def delete(self, key: str) -> bool:
        """Remove the object; False if it did not exist (S3 deletes are silent, so ask first)."""
        if await self.size(key) is None:
            return False
        await self._call("delete_object", Bucket=self.bucket, Key=self._key(key))
        return True
