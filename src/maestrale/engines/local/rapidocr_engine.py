"""The `rapidocr` engine: text recognition in process with RapidOCR 3 ([ocr] extra).

The `rapidocr` wheel bundles its default models (PP-OCRv6 small detection and recognition, and the
mobile angle classifier), run by onnxruntime; the default configuration uses them and downloads
nothing. Other model types (`TINY`, older OCR versions) would be fetched from the network at run
time, so the engine offers no option to pick them.

Catalog options (`[models.options]`), all optional:
- `max_queue`: images that may wait behind the one being recognised (default 16); one more gets
  `EngineError(503, code="engine_overloaded")`.
- `min_confidence`: lines scored below it are dropped (default 0.5).
- `angle_classifier`: run the text-direction classifier, for documents with upside-down lines
  (default false: on upright pages it sometimes turns a good line over, and the line is lost).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from maestrale.engines.local import engine_options, require
from maestrale.engines.local.worker import SerialWorker
from maestrale.engines.ocr_types import OcrImage, OcrLine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EngineError

__all__ = ["RapidOcrEngine", "RapidOcrOptions", "create_engine"]

require("rapidocr", "onnxruntime")


class RapidOcrOptions(BaseModel):
    """`options` of a `rapidocr` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    max_queue: int = Field(default=16, ge=0)
    min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    angle_classifier: bool = False


class RapidOcrEngine:
    """RapidOCR on a worker thread of its own; the models load with the first image."""

    def __init__(self, options: RapidOcrOptions) -> None:
        self._ocr: Any = None  # touched on the worker thread only
        self._min_confidence = options.min_confidence
        self._use_cls = options.angle_classifier
        self._worker: SerialWorker[object] = SerialWorker("rapidocr", options.max_queue)

    async def load(self) -> None:
        """Load the models now rather than with the first image (e.g. at start-up)."""
        await self._worker.run(lambda cancel: self._loaded())

    async def recognize(self, image: OcrImage) -> list[OcrLine]:
        """The text lines of the image, with their boxes in its pixels."""
        # The cancel event is not checked: one image is one indivisible onnxruntime call.
        return await self._worker.run(lambda cancel: self._recognize(image))

    def _loaded(self) -> Any:
        if self._ocr is None:
            from rapidocr import RapidOCR  # seconds to import: not at start-up

            try:
                # RapidOCR logs every model path on each load, and a warning for every image
                # without text (a blank page is no problem): errors only. No other parameter is
                # changed: non-default models would be downloaded.
                self._ocr = RapidOCR(params={"Global.log_level": "error"})
            except Exception as exc:  # its loaders raise a variety of types
                raise EngineError(
                    503, f"RapidOCR cannot load its models: {exc}", code="engine_unavailable"
                ) from exc
        return self._ocr

    def _recognize(self, image: OcrImage) -> list[OcrLine]:
        ocr = self._loaded()
        # RapidOCR takes BGR arrays, as OpenCV reads them.
        pixels = np.asarray(image.image.convert("RGB"))[:, :, ::-1]
        try:
            result = ocr(np.ascontiguousarray(pixels), use_cls=self._use_cls)
        except Exception as exc:
            raise EngineError(
                500, f"RapidOCR failed on {image.name}: {exc}", code="engine_error"
            ) from exc
        if result.boxes is None or result.txts is None:
            return []
        lines: list[OcrLine] = []
        for points, text, score in zip(result.boxes, result.txts, result.scores, strict=True):
            if not text.strip() or float(score) < self._min_confidence:
                continue
            xs = [float(p[0]) for p in points]
            ys = [float(p[1]) for p in points]
            lines.append(OcrLine(text.strip(), (min(xs), min(ys), max(xs), max(ys)), float(score)))
        return lines

    async def aclose(self) -> None:
        """Refuse new images, wait for the running one, and let the models be freed."""
        await self._worker.aclose()
        self._ocr = None


def create_engine(spec: ModelSpec) -> RapidOcrEngine:
    """Factory of the engine registry: check the options (`CatalogError`); models load later."""
    options = engine_options(RapidOcrOptions, spec)
    return RapidOcrEngine(options)
