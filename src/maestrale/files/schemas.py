"""Wire models of the /v1/files group (the SDK's FileSchema, CreateFileResponse, GetFileResponse,
ListFilesResponse, DeleteFileResponse, GetSignedURLResponse)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from maestrale.core.clock import unix
from maestrale.files.tables import StoredFile

Visibility = Literal["workspace", "user"]


class FileOut(BaseModel):
    id: str
    object: Literal["file"] = "file"
    bytes: int
    created_at: int
    filename: str
    purpose: str
    sample_type: str
    source: str
    num_lines: int | None
    mimetype: str | None
    signature: str | None
    expires_at: int | None
    visibility: str | None

    @classmethod
    def of(cls, row: StoredFile) -> FileOut:
        return cls(
            id=row.id,
            bytes=row.size,
            created_at=unix(row.created_at),
            filename=row.filename,
            purpose=row.purpose,
            sample_type=row.sample_type,
            source=row.source,
            num_lines=row.num_lines,
            mimetype=row.mimetype,
            signature=row.signature,
            expires_at=None if row.expires_at is None else unix(row.expires_at),
            visibility=row.visibility,
        )


class FileDetailOut(FileOut):
    """GET /v1/files/{id}: a file, with `deleted` (always false for a file that can be read)."""

    deleted: bool = False


class FileList(BaseModel):
    object: Literal["list"] = "list"
    data: list[FileOut]
    total: int | None


class FileDeleted(BaseModel):
    id: str
    object: Literal["file"] = "file"
    deleted: bool = True


class SignedUrl(BaseModel):
    url: str
