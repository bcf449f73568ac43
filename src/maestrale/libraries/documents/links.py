"""Signed links to a document's content and to its extracted text: they open without a key
until they expire, the way the files group's do (HMAC of the server secret over what the link
opens and when it expires). A link names one document and one of its two contents; altered,
moved to another document or content, or expired, it is refused with 403."""

from __future__ import annotations

import time
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.signing import sign, verify
from maestrale.files.download import SignatureExpired, SignatureInvalid
from maestrale.libraries.documents.repository import DocumentRepository
from maestrale.libraries.errors import DocumentNotFound
from maestrale.libraries.tables import LibraryDocument

Content = Literal["content", "extracted-text"]


def _message(content: Content, library_id: str, document_id: str, expires: int) -> str:
    return f"libraries:{content}:{library_id}:{document_id}:{expires}"


def signed_url(
    base_url: str,
    secret: bytes,
    content: Content,
    library_id: str,
    document_id: str,
    seconds: int,
) -> str:
    """A link to `content` of the document, valid `seconds` from now."""
    expires = int(time.time()) + seconds
    signature = sign(secret, _message(content, library_id, document_id, expires))
    path = f"/v1/libraries/{library_id}/documents/{document_id}/{content}"
    return f"{base_url}{path}?expires={expires}&signature={signature}"


async def signed_document(
    session: AsyncSession,
    secret: bytes,
    content: Content,
    library_id: str,
    document_id: str,
    expires: str,
    signature: str,
) -> LibraryDocument:
    """The document a signed link opens: 403 if its signature is wrong or it expired, 404 if
    the document is gone since."""
    # Epoch seconds: a longer number is no link of ours (and int() refuses 4,300+ digits).
    well_formed = expires.isascii() and expires.isdigit() and len(expires) <= 20
    message = _message(content, library_id, document_id, int(expires)) if well_formed else ""
    if not well_formed or not verify(secret, message, signature):
        raise SignatureInvalid("the link's signature is invalid")
    if int(expires) < time.time():
        raise SignatureExpired("the signed link has expired")
    row = await DocumentRepository(session).get(library_id, document_id)
    if row is None:
        raise DocumentNotFound(document_id)
    return row
