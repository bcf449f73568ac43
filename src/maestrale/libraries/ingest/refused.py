"""What a parser of the child process refuses a document with.

The child process that parses DOCX, HTML, Markdown and text (`child`) imports only the parsers,
not the server's errors (FastAPI, SQLAlchemy: half a second of every child's start): its
parsers raise `DocumentRefused`, and the parent raises the reason again as `Unreadable`.
"""

from __future__ import annotations


class DocumentRefused(Exception):
    """The document cannot be read; `reason` says why, for a person."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
