"""SQL of files: every read is scoped to the caller's workspace and to what the caller may see
(visibility `user` files only to their uploader), and hides expired files."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, Select, and_, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository
from maestrale.files.tables import StoredFile


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _live() -> ColumnElement[bool]:
    return or_(StoredFile.expires_at.is_(None), StoredFile.expires_at > utcnow())


class FileRepository(WorkspaceRepository[StoredFile]):
    model = StoredFile

    def __init__(self, session: AsyncSession, tenant: Tenant, key_id: str | None) -> None:
        super().__init__(session, tenant)
        self.key_id = key_id

    def _mine(self) -> ColumnElement[bool]:
        if self.tenant.user_id is not None:
            return StoredFile.user_id == self.tenant.user_id
        if self.key_id is None:
            return false()
        return and_(StoredFile.user_id.is_(None), StoredFile.key_id == self.key_id)

    def select(self) -> Select[StoredFile]:
        """The files of the workspace this caller may see, expired ones excluded."""
        visible = or_(StoredFile.visibility != "user", self._mine())
        return super().select().where(visible, _live())

    async def page(
        self,
        page: PageParams,
        *,
        purpose: str | None = None,
        sample_types: Sequence[str] = (),
        sources: Sequence[str] = (),
        mimetypes: Sequence[str] = (),
        search: str | None = None,
        with_total: bool = True,
    ) -> tuple[list[StoredFile], int | None]:
        stmt = self.select()
        if purpose:
            stmt = stmt.where(StoredFile.purpose == purpose)
        if sample_types:
            stmt = stmt.where(StoredFile.sample_type.in_(list(sample_types)))
        if sources:
            stmt = stmt.where(StoredFile.source.in_(list(sources)))
        if mimetypes:
            stmt = stmt.where(StoredFile.mimetype.in_(list(mimetypes)))
        if search:
            pattern = f"%{_like_escape(search)}%"
            stmt = stmt.where(StoredFile.filename.ilike(pattern, escape="\\"))
        total = await self.count(stmt) if with_total else None
        ordered = stmt.order_by(StoredFile.created_at.desc(), StoredFile.id.desc())
        rows = await self.list(ordered.offset(page.offset).limit(page.limit))
        return rows, total

    async def blob_keys(self, file_ids: Sequence[str]) -> dict[str, str]:
        """`{id: blob key}` of those of `file_ids` this caller may read (a job reads its input
        files with its creator's rights): another workspace's files are simply not found."""
        if not file_ids:
            return {}
        stmt = self.select().where(StoredFile.id.in_(list(file_ids)))
        found = await self.session.execute(
            stmt.with_only_columns(StoredFile.id, StoredFile.blob_key)
        )
        return {file_id: key for file_id, key in found.all()}


class WorkspaceFiles(WorkspaceRepository[StoredFile]):
    """The files of one workspace as its background jobs see them: no caller's visibility, and
    expired files included (the job that removes them needs them)."""

    model = StoredFile

    async def remove_expired(self, file_id: str) -> str | None:
        """Delete the file's row if its expiry has passed; its blob key then, else None (the
        file is gone already, never expires, or not yet)."""
        row = await self.get(file_id)
        if row is None or row.expires_at is None or row.expires_at > utcnow():
            return None
        await self.delete(row)
        return row.blob_key


async def file_by_id(session: AsyncSession, file_id: str) -> StoredFile | None:
    """A live file by id in any workspace: only for callers that proved their right to it
    otherwise (a signed link; a job acting on a row it owns)."""
    stmt = select(StoredFile).where(StoredFile.id == file_id, _live())
    found: StoredFile | None = (await session.execute(stmt)).scalar_one_or_none()
    return found
