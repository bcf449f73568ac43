"""The text of a realtime session cut into the pieces spoken one at a time: each sentence as
soon as it is complete (its end and the whitespace after it have arrived), the rest when the
client flushes or ends."""

from __future__ import annotations

import re

from maestrale.engines.speech_text import sentences

# A sentence is complete once the whitespace after its end has arrived (as speech_text cuts).
_COMPLETE = re.compile(r"(?:[.!?\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*\s+|\n\s*)$")


class TextBuffer:
    """Appended text in, complete pieces out; at most `limit` characters are ever held."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending = ""

    def append(self, text: str) -> list[str]:
        """The pieces `text` completes; the last, unfinished sentence stays (a sentence that
        grows past the limit is cut at a comma or a space)."""
        self.pending += text
        if not self.pending.strip():
            return []
        pieces = sentences(self.pending)
        if _COMPLETE.search(self.pending) is not None or len(self.pending) > self.limit:
            self.pending = ""
            return pieces
        last = pieces.pop() if pieces else ""
        # Keep the space that separates it from what comes next.
        self.pending = last + (" " if self.pending[-1].isspace() else "")
        return pieces

    def flush(self) -> list[str]:
        """Every piece held, finished or not."""
        pieces = sentences(self.pending)
        self.pending = ""
        return pieces
