"""Text cut into the pieces a speech engine speaks one at a time, so that the first piece's audio
goes out while the rest is synthesized: sentences, and a sentence too long to wait for cut at a
comma or a space."""

from __future__ import annotations

import re

# A sentence ends at . ! ? … (and their runs, closing quotes or brackets after them) followed by
# whitespace, or at a line break; "Dr. Smith" is cut too, which costs a short pause, no words.
# (Full stops of CJK text too: U+3002, U+FF01, U+FF1F; closing quotes U+201D, U+2019.)
_SENTENCE_END = re.compile(r"(?<=[.!?\u2026\u3002\uff01\uff1f])[\"'\u201d\u2019)\]]*\s+|\s*\n\s*")
_SPACES = re.compile(r"\s+")
# What no engine can speak and some choke on: control characters (espeak-ng stops at a NUL) and
# lone surrogates (valid in JSON strings, not encodable as UTF-8).
_UNSPEAKABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
# The longest piece spoken in one go (characters): what a listener waits before the first audio.
MAX_PIECE = 300


def _cut(sentence: str, limit: int) -> list[str]:
    pieces: list[str] = []
    while len(sentence) > limit:
        at = sentence.rfind(", ", 0, limit)
        at = at + 1 if at > limit // 3 else sentence.rfind(" ", 0, limit)
        if at <= 0:
            at = limit  # one word longer than the limit
        pieces.append(sentence[:at].strip())
        sentence = sentence[at:].strip()
    if sentence:
        pieces.append(sentence)
    return pieces


def speakable(text: str) -> str:
    """`text` with what cannot be spoken (control characters, lone surrogates) made spaces."""
    return _UNSPEAKABLE.sub(" ", text)


def sentences(text: str, limit: int = MAX_PIECE) -> list[str]:
    """The non-empty sentences of `text` in order, made `speakable`, whitespace folded, none
    longer than `limit`."""
    out: list[str] = []
    for raw in _SENTENCE_END.split(speakable(text)):
        sentence = _SPACES.sub(" ", raw).strip()
        if sentence:
            out.extend(_cut(sentence, limit))
    return out
