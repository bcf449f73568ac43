"""Voice test material: samples as the API takes them (base64), and crafted WAV files."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

DATA = Path(__file__).parents[1] / "audio" / "data"
# The shipped clip: 3.9 s of speech.
REPORT_WAV = (DATA / "report.wav").read_bytes()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def wav(rate: int, seconds: float, width: int = 1) -> bytes:
    """A real WAV of silence: `seconds` at `rate` Hz, mono, `width` bytes a sample."""
    size = int(rate * seconds) * width
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * width, width, width * 8)
    header = b"RIFF" + struct.pack("<I", 36 + size) + b"WAVE" + b"fmt " + fmt
    silence = (b"\x80" if width == 1 else b"\x00") * size
    return header + b"data" + struct.pack("<I", size) + silence


async def create_voice(
    client: httpx.AsyncClient, name: str = "Narrator", sample: bytes = REPORT_WAV, **fields: Any
) -> dict[str, Any]:
    resp = await client.post(
        "/v1/audio/voices", json={"name": name, "sample_audio": b64(sample), **fields}
    )
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def stored_samples(app: FastAPI) -> list[Path]:
    root = Path(app.state.settings.resolved_blob_dir)
    return [p for p in root.rglob("*.wav") if p.is_file()] if root.exists() else []
