"""A document's processing states (the SDK's ProcessStatus) and their human labels (its
deprecated `processing_status` string: the reason, for a document in error)."""

from __future__ import annotations

from typing import Final

TODO: Final = "todo"
IN_PROGRESS: Final = "in_progress"
DONE: Final = "done"
ERROR: Final = "error"
UNFINISHED = frozenset({TODO, IN_PROGRESS})

LABELS = {TODO: "Todo", IN_PROGRESS: "InProgress", DONE: "Done"}
# A reason longer than this is cut (a runaway message must not bloat the row).
MAX_REASON_CHARS = 2000


def error_label(reason: str) -> str:
    """The `processing_status` of a document in error: the reason, for a person."""
    reason = " ".join(reason.split()) or "unknown error"
    return f"Error: {reason}"[:MAX_REASON_CHARS]
