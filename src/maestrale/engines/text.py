"""Text of wire message content, shared by the engines and the gateway."""

from __future__ import annotations

from typing import Any


def content_text(content: Any) -> str:
    """The text of a message `content`: a string, or its text chunks joined by newlines.

    Chunks are joined with newlines (not run together) so that a line-oriented directive in its
    own chunk stays a line of its own. Non-text chunks (images, documents, ...) carry no text.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            chunk["text"]
            for chunk in content
            if isinstance(chunk, dict)
            and chunk.get("type", "text") == "text"
            and isinstance(chunk.get("text"), str)
        )
    return ""
