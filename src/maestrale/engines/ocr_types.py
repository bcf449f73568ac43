"""Engine-level OCR types: what a text recogniser returns for one image.

Kept free of imaging libraries (Pillow, numpy) so that the core install can import the Protocols;
the image handed to an engine is a Pillow image, typed loosely here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# (left, top, right, bottom) in pixels of the image that was recognised.
Box = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class OcrLine:
    """One line (or line fragment) of recognised text with its box and the engine's confidence
    in [0, 1]."""

    text: str
    box: Box
    confidence: float


@dataclass(frozen=True, slots=True)
class OcrImage:
    """An image to recognise: a Pillow image (RGB), and its name for error messages."""

    image: Any
    name: str = "image"
