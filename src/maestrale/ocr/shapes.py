"""The OCR response's page objects, from the recognised pages and the request's output options
(`include_image_base64`, `table_format`, `include_blocks`, `confidence_scores_granularity`)."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from typing import Any

from maestrale.ocr.layout import Block
from maestrale.ocr.pipeline import PageResult
from maestrale.ocr.schemas import OCRRequest


@dataclass(slots=True)
class Shaper:
    include_base64: bool = False
    table_format: str | None = None
    include_blocks: bool = True
    granularity: str | None = None
    tables_seen: int = 0  # table ids run across the document, as image ids do

    @classmethod
    def of(cls, request: OCRRequest) -> Shaper:
        return cls(
            include_base64=bool(request.include_image_base64),
            table_format=request.table_format,
            include_blocks=request.include_blocks,
            granularity=request.confidence_scores_granularity,
        )

    def page(self, page: PageResult) -> dict[str, Any]:
        markdown, tables = self._tables(page.layout.blocks)
        body: dict[str, Any] = {
            "index": page.index,
            "markdown": markdown,
            "images": [
                {
                    "id": image.id,
                    "top_left_x": image.box[0],
                    "top_left_y": image.box[1],
                    "bottom_right_x": image.box[2],
                    "bottom_right_y": image.box[3],
                    "image_base64": jpeg_data_url(image.image) if self.include_base64 else None,
                    "image_annotation": None,
                }
                for image in page.images
            ],
            "dimensions": {"dpi": page.dpi, "height": page.height, "width": page.width},
            "tables": tables,
            "hyperlinks": [],
            "header": None,
            "footer": None,
        }
        if self.include_blocks or self.granularity == "block":
            body["blocks"] = [_block(block, self.granularity) for block in page.layout.blocks]
        if self.granularity is not None:
            body["confidence_scores"] = self._confidence(page, markdown)
        return body

    def _tables(self, blocks: list[Block]) -> tuple[str, list[dict[str, Any]]]:
        """The markdown, with each table replaced by a link to it when `table_format` asks for
        tables apart, and those tables."""
        if self.table_format is None:
            return "\n\n".join(block.content for block in blocks), []
        parts: list[str] = []
        tables: list[dict[str, Any]] = []
        extension = "md" if self.table_format == "markdown" else "html"
        for block in blocks:
            if block.type != "table" or block.cells is None:
                parts.append(block.content)
                continue
            table_id = f"tbl-{self.tables_seen}.{extension}"
            self.tables_seen += 1
            content = block.content if extension == "md" else _html_table(block.cells)
            tables.append({"id": table_id, "content": content, "format": self.table_format})
            parts.append(f"[{table_id}]({table_id})")
        return "\n\n".join(parts), tables

    def _confidence(self, page: PageResult, markdown: str) -> dict[str, Any]:
        words = page.layout.words
        scores = [confidence for _, confidence in words] or [1.0]
        body: dict[str, Any] = {
            "average_page_confidence_score": sum(scores) / len(scores),
            "minimum_page_confidence_score": min(scores),
        }
        if self.granularity == "word":
            located: list[dict[str, Any]] = []
            cursor = 0
            for word, confidence in words:
                found = markdown.find(word, cursor)
                if found < 0:
                    continue  # in a table moved out of the markdown
                located.append({"text": word, "confidence": confidence, "start_index": found})
                cursor = found + len(word)
            body["word_confidence_scores"] = located
        return body


def _block(block: Block, granularity: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": block.type,
        "top_left_x": block.box[0],
        "top_left_y": block.box[1],
        "bottom_right_x": block.box[2],
        "bottom_right_y": block.box[3],
        "content": block.content,
    }
    if block.image_id is not None:
        body["image_id"] = block.image_id
    if granularity == "block":
        # The recognizer scores text, not the layout's guess of the block's type: that one is
        # None, as the SDK's model allows ("could not be scored"); an image has no content.
        scores = block.confidences
        body["confidence_scores"] = {
            "average_content_confidence_score": sum(scores) / len(scores) if scores else None,
            "minimum_content_confidence_score": min(scores) if scores else None,
            "block_type_confidence_score": None,
        }
    return body


def _html_table(rows: list[list[str]]) -> str:
    def row(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"

    head, *rest = rows
    return "<table>" + row(head, "th") + "".join(row(r, "td") for r in rest) + "</table>"


def jpeg_data_url(image: Any) -> str:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
