"""Wire models of libraries and their sharings (the SDK's CreateLibraryRequest,
UpdateLibraryRequest, Library, ListLibrariesResponse, PaginationInfo, SharingRequest,
SharingDelete, Sharing, ListSharingResponse). Unknown request fields are ignored."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from maestrale.libraries.ingest.chunking import DEFAULT_CHUNK_SIZE, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE
from maestrale.libraries.tables import Library, LibrarySharing

MAX_NAME_CHARS = 512
MAX_DESCRIPTION_CHARS = 10_000


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


# Text stored and shown back: no NUL (Postgres cannot store it; JSON bodies are otherwise
# checked for valid Unicode before any route runs).
CleanText = Annotated[str, AfterValidator(_no_nul)]


class LibraryCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: CleanText = Field(min_length=1, max_length=MAX_NAME_CHARS)
    description: CleanText | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)
    chunk_size: int | None = Field(
        default=None,
        ge=MIN_CHUNK_SIZE,
        le=MAX_CHUNK_SIZE,
        description="tokens of a chunk of the library's documents (default: the server's, "
        f"{DEFAULT_CHUNK_SIZE})",
    )
    owner_type: Literal["User", "Workspace"] | None = Field(
        default=None,
        description="User: only its creator (and those it is shared with) see it; Workspace: "
        "every key of the workspace does. Default: User for a key of a user, else Workspace",
    )


class LibraryUpdate(BaseModel):
    """Only the fields sent change; `description: null` clears it."""

    model_config = ConfigDict(extra="ignore")

    name: CleanText | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)
    description: CleanText | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)


class LibraryOut(BaseModel):
    id: str
    name: str
    created_at: datetime
    updated_at: datetime
    owner_id: str | None
    owner_type: str
    total_size: int
    nb_documents: int
    chunk_size: int | None
    emoji: str | None = None
    description: str | None
    generated_description: str | None = None
    explicit_user_members_count: int | None = None
    explicit_workspace_members_count: int | None = None
    org_sharing_role: str | None = None
    generated_name: str | None = None

    @classmethod
    def of(cls, row: Library, sharings: list[LibrarySharing] | None = None) -> LibraryOut:
        shared = sharings or []
        org_role = next((s.role for s in shared if s.share_with_type == "Org"), None)
        return cls(
            id=row.id,
            name=row.name,
            created_at=row.created_at,
            updated_at=row.updated_at,
            owner_id=row.owner_id,
            owner_type=row.owner_type,
            total_size=row.total_size,
            nb_documents=row.nb_documents,
            chunk_size=row.chunk_size,
            description=row.description,
            explicit_user_members_count=sum(1 for s in shared if s.share_with_type == "User"),
            explicit_workspace_members_count=sum(
                1 for s in shared if s.share_with_type == "Workspace"
            ),
            org_sharing_role=org_role,
        )


class PaginationInfo(BaseModel):
    total_items: int
    total_pages: int
    current_page: int
    page_size: int
    has_more: bool

    @classmethod
    def of(cls, total: int, page: int, page_size: int) -> PaginationInfo:
        return cls(
            total_items=total,
            total_pages=math.ceil(total / page_size),
            current_page=page,
            page_size=page_size,
            has_more=(page + 1) * page_size < total,
        )


class LibraryList(BaseModel):
    data: list[LibraryOut]
    pagination: PaginationInfo | None
    next_page_token: str | None


ShareRole = Literal["Viewer", "Editor"]
EntityType = Literal["User", "Workspace", "Org"]


class SharingIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    level: ShareRole
    share_with_uuid: str = Field(min_length=1, max_length=36)
    share_with_type: EntityType
    org_id: str | None = Field(default=None, max_length=36)


class SharingDeleteIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    share_with_uuid: str = Field(min_length=1, max_length=36)
    share_with_type: EntityType
    org_id: str | None = Field(default=None, max_length=36)


class SharingOut(BaseModel):
    library_id: str
    org_id: str
    role: str
    share_with_type: str
    share_with_uuid: str | None
    user_id: str | None = None

    @classmethod
    def of(cls, row: LibrarySharing) -> SharingOut:
        return cls(
            library_id=row.library_id,
            org_id=row.organization_id,
            role=row.role,
            share_with_type=row.share_with_type,
            share_with_uuid=row.share_with_uuid,
            user_id=row.share_with_uuid if row.share_with_type == "User" else None,
        )

    @classmethod
    def owner(cls, library: Library) -> SharingOut:
        """The owner's access, listed first: it is not a sharing and cannot be changed."""
        return cls(
            library_id=library.id,
            org_id=library.organization_id,
            role="Owner",
            share_with_type=library.owner_type,
            share_with_uuid=library.owner_id,
            user_id=library.owner_id if library.owner_type == "User" else None,
        )


class SharingList(BaseModel):
    data: list[SharingOut]
