"""The `openai_compat_ocr` engine: OCR by an upstream that serves the platform's `POST /ocr`
(the Mistral platform, or another Maestrale).

The whole request goes up as it came (model renamed to `upstream_model`, uploaded files turned
into data URLs by the OCR service, since the upstream cannot read them); the upstream's answer
comes back as it is. Catalog entry: `engine = "openai_compat_ocr"`, `base_url` (ending in `/v1`),
`upstream_model`, `api_key_env`, and the `options` of the `openai_compat` engine.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from maestrale.engines.ocr_types import OcrImage, OcrLine
from maestrale.engines.openai_compat.client import UpstreamClient
from maestrale.engines.openai_compat.options import UpstreamConfig, config_from_spec
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EngineError

__all__ = ["UpstreamOcrEngine", "create_engine"]

_OCR = "/ocr"


def _invalid(what: str) -> EngineError:
    return EngineError(502, f"the upstream's OCR answer is invalid: {what}", code="upstream_error")


class UpstreamOcrEngine:
    """Forwards OCR requests to the upstream's `/ocr` over one pooled HTTP client."""

    def __init__(self, config: UpstreamConfig, upstream_model: str) -> None:
        self._client = UpstreamClient(config)
        self._model = upstream_model

    async def process_document(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST the request to `/ocr` and return the upstream's OCR response."""
        answer = await self._client.post_json(_OCR, body)
        if not isinstance(answer, dict) or not isinstance(answer.get("pages"), list):
            raise _invalid("no `pages` list")
        return answer

    async def recognize(self, image: OcrImage) -> list[OcrLine]:
        """Recognise one image with the upstream: its markdown lines, each boxed by the whole
        image (the upstream gives no line boxes)."""
        buffer = io.BytesIO()
        image.image.save(buffer, format="PNG")
        url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        answer = await self.process_document(
            {"model": self._model, "document": {"type": "image_url", "image_url": url}}
        )
        width, height = image.image.size
        box = (0.0, 0.0, float(width), float(height))
        lines: list[OcrLine] = []
        for page in answer["pages"]:
            markdown = page.get("markdown") if isinstance(page, dict) else None
            if not isinstance(markdown, str):
                raise _invalid("a page without markdown")
            lines.extend(OcrLine(t.strip(), box, 1.0) for t in markdown.splitlines() if t.strip())
        return lines

    async def aclose(self) -> None:
        """Close the pooled connections to the upstream."""
        await self._client.aclose()


def create_engine(spec: ModelSpec) -> UpstreamOcrEngine:
    """Factory of the engine registry: as `openai_compat` (`base_url` required, key from
    `api_key_env`, options checked); raise `CatalogError` naming the model otherwise."""
    return UpstreamOcrEngine(config_from_spec(spec), spec.upstream_model or spec.id)
