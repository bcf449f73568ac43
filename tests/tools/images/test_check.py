"""What counts as an image: accepted formats by their magic bytes, parsed whole by Pillow;
truncated files and pixel bombs refused."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from maestrale.tools.images.check import NotAnImage, check_image, sniff
from tests.tools.images.images_server import jpeg, png


def encoded(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (10, 20), (1, 2, 3)).save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("data", "kind", "extension"),
    [
        (png(), "PNG", "png"),
        (jpeg(), "JPEG", "jpg"),
        (encoded("WEBP"), "WEBP", "webp"),
        (encoded("GIF"), "GIF", "gif"),
    ],
)
def test_accepted_formats(data: bytes, kind: str, extension: str) -> None:
    checked = check_image(data, 10**8)
    assert (checked.format, checked.extension) == (kind, extension)
    assert checked.mimetype == f"image/{'jpeg' if kind == 'JPEG' else kind.lower()}"
    assert checked.width and checked.height


def bomb(width: int, height: int) -> bytes:
    """A PNG whose header announces `width` x `height` pixels (its data is one pixel's)."""
    real = png(1, 1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    ihdr = struct.pack(">I", len(header)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return real[:8] + ihdr + real[8 + 25 :]


@pytest.mark.parametrize("size", [(20_000, 20_000), (100_000, 100_000)])
def test_pixel_bombs_are_refused(size: tuple[int, int]) -> None:
    with pytest.raises(NotAnImage, match="pixels"):
        check_image(bomb(*size), 8192 * 8192)


@pytest.mark.parametrize(
    "data",
    [
        png()[:40],  # truncated
        png()[:-12] + b"\x00" * 12,  # no IEND, broken checksum
        b"\xff\xd8\xff" + b"\x00" * 64,  # JPEG magic, no JPEG
        b"GIF89a",
        b"<svg xmlns='http://www.w3.org/2000/svg'/>",  # SVG can carry scripts: not accepted
        b"",
    ],
)
def test_broken_or_other_files_are_refused(data: bytes) -> None:
    with pytest.raises(NotAnImage):
        check_image(data, 10**8)


def test_sniff() -> None:
    assert sniff(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "WEBP"
    assert sniff(b"RIFF\x00\x00\x00\x00WAVEfmt ") is None
