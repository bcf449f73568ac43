"""Whether bytes an images upstream answered are really an image: the magic bytes of a format
a browser shows (PNG, JPEG, WebP, GIF), and, with Pillow installed, a parse of the whole file
(its header, chunk checksums and dimensions) that agrees with them."""

from __future__ import annotations

import io
from dataclasses import dataclass

# Format → (mimetype, extension).
FORMATS: dict[str, tuple[str, str]] = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "WEBP": ("image/webp", "webp"),
    "GIF": ("image/gif", "gif"),
}


class NotAnImage(Exception):
    """The bytes are not an image of an accepted format (the reason is the message)."""


@dataclass(frozen=True, slots=True)
class CheckedImage:
    format: str  # a key of FORMATS
    mimetype: str
    extension: str
    width: int | None  # None when Pillow is not installed
    height: int | None


def sniff(data: bytes) -> str | None:
    """The format the magic bytes announce, if it is an accepted one."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    return None


def check_image(data: bytes, max_pixels: int) -> CheckedImage:
    """The image `data` holds; raises NotAnImage. CPU-bound: call it in a worker thread."""
    kind = sniff(data)
    if kind is None:
        raise NotAnImage("its bytes are not a PNG, JPEG, WebP or GIF image")
    mimetype, extension = FORMATS[kind]
    try:
        from PIL import Image
    except ImportError:  # Pillow is optional (the `ocr` extra): the magic bytes are all we check
        return CheckedImage(kind, mimetype, extension, None, None)
    try:
        # Pillow refuses a bomb past twice its own limit (and warns past it): ours is lower.
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            found = image.format
            if width * height > max_pixels:
                raise NotAnImage(f"it has {width}x{height} pixels, over {max_pixels}")
            image.verify()
    except NotAnImage:
        raise
    except Image.DecompressionBombError as exc:
        raise NotAnImage("it has too many pixels") from exc
    except Exception as exc:  # a hostile file makes Pillow raise many kinds of errors
        raise NotAnImage(f"it cannot be read as a {kind} image ({type(exc).__name__})") from exc
    if found != kind:
        raise NotAnImage(f"its bytes announce {kind} but it reads as {found}")
    return CheckedImage(kind, mimetype, extension, width, height)
