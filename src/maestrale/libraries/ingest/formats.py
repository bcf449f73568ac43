"""Which reader a document needs, from its bytes first, then its name and declared type.

Uploads lie about their type (a browser sends `application/octet-stream`, a renamed file keeps
its old extension): the bytes decide wherever they can (PDF, images, ZIP containers, legacy
Office files), and the name or declared type only picks among text formats (HTML, Markdown,
plain text), which no magic number tells apart. A file whose name or type promises a binary
format its bytes do not have is refused rather than read as text.
"""

from __future__ import annotations

import io
import mimetypes
import re
import zipfile
from dataclasses import dataclass
from typing import Literal

from maestrale.libraries.ingest.errors import Unreadable

Reader = Literal["pdf", "image", "docx", "html", "markdown", "text"]

DOCX_MIMETYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_IMAGES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF87a", "image/gif", "gif"),
    (b"GIF89a", "image/gif", "gif"),
    (b"BM", "image/bmp", "bmp"),
    (b"II*\x00", "image/tiff", "tiff"),
    (b"MM\x00*", "image/tiff", "tiff"),
)
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy Office files, and encrypted OOXML ones
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
# Entries of a ZIP container (a DOCX has a few dozen).
MAX_ZIP_ENTRIES = 10_000
_HTML_EXTENSIONS = frozenset({"html", "htm", "xhtml", "shtml"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_MARKDOWN_EXTENSIONS = frozenset({"md", "markdown", "mdown", "mkd", "mkdn", "mdx"})
_MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
# Extensions and types of binary formats: a file claiming one must have its bytes.
_BINARY_CLAIMS = {
    "pdf": "a PDF",
    "docx": "a DOCX document",
    "png": "an image",
    "jpg": "an image",
    "jpeg": "an image",
    "gif": "an image",
    "bmp": "an image",
    "tif": "an image",
    "tiff": "an image",
    "webp": "an image",
}
_HTML_SNIFF = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html[\s>])", re.I | re.S)
_EXTENSION = re.compile(r"^[a-z0-9]{1,10}$")


@dataclass(frozen=True, slots=True)
class Format:
    reader: Reader
    mimetype: str
    extension: str  # without the dot, lower case: "pdf", "docx", "md"


def extension_of(filename: str) -> str | None:
    """The file name's extension (lower case, no dot) when it looks like one."""
    name = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    if "." not in name.strip("."):
        return None
    extension = name.rsplit(".", 1)[1].lower()
    return extension if _EXTENSION.match(extension) else None


def _declared(mimetype: str | None) -> str:
    return (mimetype or "").split(";", 1)[0].strip().lower()


def _zip_format(data: bytes) -> Format:
    # Counted before zipfile reads the directory: it builds an object per entry.
    if data.count(b"PK\x01\x02") > MAX_ZIP_ENTRIES:
        raise Unreadable(f"the ZIP container has over {MAX_ZIP_ENTRIES} entries")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise Unreadable(f"the file is a damaged ZIP container (DOCX?): {exc}") from exc
    if "word/document.xml" in names:
        return Format("docx", DOCX_MIMETYPE, "docx")
    if any(name.startswith("xl/") for name in names):
        kind = "a spreadsheet (XLSX)"
    elif any(name.startswith("ppt/") for name in names):
        kind = "a presentation (PPTX)"
    elif "mimetype" in names:
        kind = "an OpenDocument file"
    else:
        kind = "a ZIP archive"
    raise Unreadable(f"the file is {kind}, which libraries do not read: send PDF, DOCX or text")


def _image_format(data: bytes) -> Format | None:
    for magic, mimetype, extension in _IMAGES:
        if data.startswith(magic):
            return Format("image", mimetype, extension)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return Format("image", "image/webp", "webp")
    return None


def _claimed_binary(extension: str | None, declared: str) -> str | None:
    if extension in _BINARY_CLAIMS:
        return _BINARY_CLAIMS[extension]
    if declared == "application/pdf":
        return "a PDF"
    if declared == DOCX_MIMETYPE:
        return "a DOCX document"
    if declared.startswith("image/"):
        return "an image"
    return None


def detect(data: bytes, filename: str, mimetype: str | None) -> Format:
    """The document's format; `Unreadable` for a format libraries do not read."""
    extension = extension_of(filename)
    declared = _declared(mimetype)
    if b"%PDF-" in data[:1024]:
        return Format("pdf", "application/pdf", "pdf")
    image = _image_format(data)
    if image is not None:
        return image
    if data.startswith(_ZIP):
        return _zip_format(data)
    if data.startswith(_OLE):
        raise Unreadable(
            "the file is a legacy Office document (.doc, .xls, .ppt) or a password-protected "
            "Office file, which libraries do not read: save it as DOCX or PDF"
        )
    if data.startswith(b"{\\rtf"):
        raise Unreadable("the file is RTF, which libraries do not read: save it as DOCX or PDF")
    claim = _claimed_binary(extension, declared)
    if claim is not None:
        raise Unreadable(f"the file is named or declared as {claim} but its content is not one")
    if extension in _HTML_EXTENSIONS or declared in _HTML_TYPES or _HTML_SNIFF.match(data[:2048]):
        return Format("html", "text/html", extension if extension in _HTML_EXTENSIONS else "html")
    if extension in _MARKDOWN_EXTENSIONS or declared in _MARKDOWN_TYPES:
        return Format("markdown", "text/markdown", extension or "md")
    return Format("text", _text_mimetype(filename, declared), extension or "txt")


def _text_mimetype(filename: str, declared: str) -> str:
    """A text type for a plain text file: the declared one when it is textual, else the one its
    name suggests, else text/plain."""
    for candidate in (declared, mimetypes.guess_type(filename, strict=False)[0] or ""):
        if candidate.startswith("text/") or candidate in (
            "application/json",
            "application/xml",
            "application/x-yaml",
            "application/yaml",
            "application/javascript",
            "application/x-sh",
            "application/sql",
        ):
            return candidate
    return "text/plain"
