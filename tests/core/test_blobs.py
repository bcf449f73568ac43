"""Local blob storage: streamed writes, ranges, size limits that store nothing, safe keys."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from maestrale.core.blobs import BlobStore, BlobTooLarge, LocalBlobStore


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _read(store: LocalBlobStore, key: str, **kw: int) -> bytes:
    return b"".join([chunk async for chunk in store.get(key, **kw)])


async def test_put_get_range_delete(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    assert isinstance(store, BlobStore)
    size = await store.put("ws/a/file.bin", _chunks(b"hello ", b"world"))
    assert size == 11
    assert await store.size("ws/a/file.bin") == 11
    assert await _read(store, "ws/a/file.bin") == b"hello world"
    assert await _read(store, "ws/a/file.bin", start=6) == b"world"
    assert await _read(store, "ws/a/file.bin", start=2, end=5) == b"llo"
    assert await store.delete("ws/a/file.bin") is True
    assert await store.delete("ws/a/file.bin") is False
    assert await store.size("ws/a/file.bin") is None
    with pytest.raises(KeyError):
        await _read(store, "ws/a/file.bin")


async def test_too_large_stores_nothing(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    with pytest.raises(BlobTooLarge):
        await store.put("big", _chunks(b"x" * 10, b"y" * 10), max_bytes=15)
    assert await store.size("big") is None
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("key", ["../escape", "a/../../b", "/abs", "", "a\x00b", ".hidden"])
async def test_unsafe_keys_are_refused(tmp_path: Path, key: str) -> None:
    store = LocalBlobStore(tmp_path / "root")
    with pytest.raises(ValueError, match="invalid blob key"):
        await store.put(key, _chunks(b"x"))
