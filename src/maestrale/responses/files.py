"""The file and image parts of a response's input, read: an `input_file` becomes the text the
model reads (or, for an image, the image it sees), an `input_image` given by `file_id` becomes a
`data:` URL image. Chat engines read text and images only: a part is read here or refused with
a 4xx naming it (`input[i].content[j]`), never passed on for a model to ignore.

The bytes come from an uploaded file of the caller's workspace (`file_id`: its row is read in
the request's unit of work, another workspace's id is a 404), a URL (`file_url`: fetched under
the fetch policy, SSRF guard and size and time bounds, `core.fetch`) or the part itself
(`file_data`: a `data:` URL or plain base64, its type told by `filename`). The transaction is
ended before the blob store or a URL is reached (docs/architecture.md §3). Their text is read as
library documents' is (`libraries.ingest`: UTF-8 text directly; PDF, DOCX, HTML, Markdown by their
readers), without OCR: a scan has no text to give.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

from maestrale.core.blobs import BlobStore
from maestrale.core.errors import AppError, BadRequest, PayloadTooLarge
from maestrale.core.fetch import FetchPolicy, decode_data_url, fetch_url
from maestrale.core.uow import UnitOfWork
from maestrale.files.repository import FileRepository
from maestrale.files.service import FileNotFound
from maestrale.files.tables import StoredFile
from maestrale.libraries.ingest.errors import Unreadable
from maestrale.libraries.ingest.extract import ExtractionLimits, extract
from maestrale.libraries.ingest.formats import Format, detect
from maestrale.libraries.ingest.plain import clean, decode_text
from maestrale.libraries.ingest.refused import DocumentRefused

if TYPE_CHECKING:
    from maestrale.config import Settings
    from maestrale.core.auth.principal import Tenant

# The chunk type of a part still to read; `read_input_files` replaces every one of them.
PENDING = "pending_file"
Kind = Literal["file", "image"]
_NO_OCR = "the document has no text layer (a scan?): input files are not read with OCR"


class UnreadableFile(BadRequest):
    code = "unreadable_file"


def pending(
    kind: Kind, source: str, value: str, filename: str | None, where: str
) -> dict[str, Any]:
    """The chunk of a file or image part to read: what it is, where its bytes are (`source`: the
    part's field file_id, file_url or file_data) and the part's place."""
    return {
        "type": PENDING,
        "kind": kind,
        "source": source,
        "value": value,
        "filename": filename,
        "param": where,
    }


@dataclass(frozen=True, slots=True)
class InputFiles:
    """What reading input files needs: the blob store of uploads (None: a `file_id` is refused),
    the fetch policy (what a URL may reach, and how much any file may weigh), the bounds of
    reading a document, and the most bytes one part may add to the request: its text in UTF-8,
    or its image as a data: URL (413 beyond)."""

    blobs: BlobStore | None = None
    policy: FetchPolicy = field(default_factory=FetchPolicy)
    limits: ExtractionLimits = field(default_factory=ExtractionLimits)
    max_chunk_bytes: int = 16 * 1024 * 1024

    @classmethod
    def of(cls, settings: Settings, blobs: BlobStore) -> InputFiles:
        # A file's text (or image) may be as large as the same sent inline could be: the
        # largest JSON body (past the model's context, it is refused as an inline one is).
        return cls(
            blobs,
            settings.fetch_policy,
            ExtractionLimits.of(settings),
            settings.max_json_request_bytes,
        )


@dataclass(frozen=True, slots=True)
class _Bytes:
    data: bytes
    name: str
    mimetype: str | None


def _at(exc: AppError, where: str) -> AppError:
    """`exc` naming the part it is about (its status and code unchanged)."""
    exc.message = f"{where}: {exc.message}"
    exc.args = (exc.message,)
    exc.param = where
    return exc


def _pending(added: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        chunk
        for e in added
        if e.get("type") == "message.input" and isinstance(e.get("content"), list)
        for chunk in e["content"]
        if chunk.get("type") == PENDING
    ]


async def read_input_files(
    added: list[dict[str, Any]],
    work: UnitOfWork,
    tenant: Tenant,
    key_id: str | None,
    files: InputFiles | None,
) -> list[dict[str, Any]]:
    """`added` (a request's entries) with each pending part read: a text chunk (the file's name,
    then its text) or an image chunk. Ends `work`'s transaction once the rows are read, when
    there is anything to read. 404 for a file this caller cannot see; 400 for a URL refused or
    failing, a type that cannot be read, an image part that is not an image; 413 over a bound."""
    parts = _pending(added)
    if not parts:
        return added
    files = files or InputFiles()
    rows: dict[str, StoredFile] = {}
    repo = FileRepository(work.session, tenant, key_id)
    for part in parts:
        if part["source"] == "file_id" and part["value"] not in rows:
            rows[part["value"]] = await _row(repo, part, files)
    await work.release()
    read: dict[int, dict[str, Any]] = {}
    for part in parts:
        try:
            read[id(part)] = await _read(part, rows, files)
        except AppError as exc:
            _at(exc, part["param"])
            raise
    return [
        {**e, "content": [read.get(id(c), c) for c in e["content"]]}
        if e.get("type") == "message.input" and isinstance(e.get("content"), list)
        else e
        for e in added
    ]


async def _row(repo: FileRepository, part: dict[str, Any], files: InputFiles) -> StoredFile:
    where, file_id = part["param"], part["value"]
    if files.blobs is None:
        raise BadRequest(f"{where}: uploaded files are not read here", param=where)
    row = await repo.get(file_id)  # scoped to the caller's workspace and visibility
    if row is None:
        raise FileNotFound(f"{where}: file {file_id!r} not found", param=where)
    if row.size > files.policy.max_bytes:
        raise PayloadTooLarge(
            f"{where}: file {file_id!r} is over the {files.policy.max_bytes}-byte limit of an "
            "input file",
            param=where,
        )
    return row


async def _read(
    part: dict[str, Any], rows: dict[str, StoredFile], files: InputFiles
) -> dict[str, Any]:
    got = await _bytes(part, rows, files)
    if not got.data:
        raise UnreadableFile(f"{got.name} is empty")
    try:
        found = detect(got.data, got.name, got.mimetype)
    except Unreadable as exc:
        if part["kind"] == "image":
            raise UnreadableFile(f"{got.name} is not an image") from exc
        raise
    if found.reader == "image":
        encoded = base64.b64encode(got.data).decode("ascii")
        url = f"data:{found.mimetype};base64,{encoded}"
        if len(url) > files.max_chunk_bytes:
            raise PayloadTooLarge(
                f"{got.name} is over {files.max_chunk_bytes} bytes as a data: URL, the limit of "
                "an input image"
            )
        return {"type": "image_url", "image_url": url}
    if part["kind"] == "image":
        raise UnreadableFile(
            f"{got.name} is not an image (PNG, JPEG, GIF, BMP, TIFF or WebP): send it as an "
            "input_file part"
        )
    text = await _text(got, found, files)
    if len(text.encode("utf-8", "surrogatepass")) > files.max_chunk_bytes:
        raise PayloadTooLarge(
            f"the text of {got.name} is over {files.max_chunk_bytes} bytes, the limit of an input "
            "file's text"
        )
    return {"type": "text", "text": f"{got.name}\n{text}"}


async def _text(got: _Bytes, found: Format, files: InputFiles) -> str:
    """The file's text, as a library document's is read; `Unreadable` when it has none."""
    if found.reader == "text":
        try:
            text = clean(decode_text(got.data))
        except DocumentRefused as exc:
            raise Unreadable(exc.reason) from exc
        if not text.strip():
            raise Unreadable("the document has no text")
        return text
    extracted = await extract(
        got.data, got.name, got.mimetype, None, limits=files.limits, no_ocr=_NO_OCR
    )
    return "\n\n".join(page for page in extracted.pages if page.strip())


async def _bytes(part: dict[str, Any], rows: dict[str, StoredFile], files: InputFiles) -> _Bytes:
    source, value, filename = part["source"], part["value"], part["filename"]
    if source == "file_id":
        row = rows[value]
        return _Bytes(await _blob(row, files), filename or row.filename, row.mimetype)
    if source == "file_url":
        fetched = await fetch_url(value, files.policy)  # the transaction is over: see above
        path = unquote(urlsplit(fetched.url).path).rsplit("/", 1)[-1]
        return _Bytes(fetched.content, filename or path[:200] or "file", fetched.content_type)
    name = filename or "file"
    if value[:5].lower() == "data:":
        decoded = decode_data_url(value, files.policy)
        return _Bytes(decoded.content, name, decoded.content_type)
    if len(value) > files.policy.max_bytes * 4 // 3 + 8:
        raise PayloadTooLarge(f"`file_data` holds more than {files.policy.max_bytes} bytes")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(
            "`file_data` must be a data: URL or base64", code="invalid_file_data"
        ) from exc
    return _Bytes(data, name, mimetypes.guess_type(name)[0])


async def _blob(row: StoredFile, files: InputFiles) -> bytes:
    assert files.blobs is not None  # `_row` refused file ids without a blob store
    limit = files.policy.max_bytes
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in files.blobs.get(row.blob_key):
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(
                    f"file {row.id!r} is over the {limit}-byte limit of an input file"
                )
            chunks.append(chunk)
    except KeyError as exc:
        raise FileNotFound(f"the content of file {row.id!r} is no longer stored") from exc
    return b"".join(chunks)
