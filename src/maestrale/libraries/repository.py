"""SQL of libraries and their sharings, scoped to what the caller may see (the rules of
`access`, as SQL: `visible_to`, `owned_by`, `names_caller`).

Writers that touch a library and its documents take the library's row first (an UPDATE of it),
then the documents': uploads, document and library deletions all do, so that they serialise
on Postgres without deadlocks and the counters stay exact.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    delete,
    exists,
    false,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.auth.tables import User, Workspace
from maestrale.core.clock import utcnow
from maestrale.core.pagination import keyset_after
from maestrale.libraries.access import ORG, OWNER, USER, WORKSPACE, best_role, owns
from maestrale.libraries.tables import Library, LibraryDocument, LibrarySharing


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def contains(column: Any, text: str) -> ColumnElement[bool]:
    """Case-insensitive substring match, the pattern's wildcards taken literally."""
    result: ColumnElement[bool] = column.ilike(f"%{like_escape(text)}%", escape="\\")
    return result


def owned_by(tenant: Tenant) -> ColumnElement[bool]:
    """The libraries the caller owns: its workspace's, and its user's in that workspace."""
    mine: ColumnElement[bool] = (
        and_(Library.owner_type == USER, Library.owner_id == tenant.user_id)
        if tenant.user_id is not None
        else false()
    )
    return and_(
        Library.organization_id == tenant.organization_id,
        Library.workspace_id == tenant.workspace_id,
        or_(Library.owner_type == WORKSPACE, mine),
    )


def names_caller(tenant: Tenant) -> ColumnElement[bool]:
    """The sharings that apply to the caller (of any library: callers add the library)."""
    targets = [
        and_(
            LibrarySharing.share_with_type == WORKSPACE,
            LibrarySharing.share_with_uuid == tenant.workspace_id,
        ),
        and_(
            LibrarySharing.share_with_type == ORG,
            LibrarySharing.share_with_uuid == tenant.organization_id,
        ),
    ]
    if tenant.user_id is not None:
        targets.append(
            and_(
                LibrarySharing.share_with_type == USER,
                LibrarySharing.share_with_uuid == tenant.user_id,
            )
        )
    return and_(LibrarySharing.organization_id == tenant.organization_id, or_(*targets))


def visible_to(tenant: Tenant) -> ColumnElement[bool]:
    """The libraries the caller may read: owned, or shared with it at any role."""
    shared = exists().where(LibrarySharing.library_id == Library.id, names_caller(tenant))
    return and_(Library.organization_id == tenant.organization_id, or_(owned_by(tenant), shared))


def document_live() -> ColumnElement[bool]:
    """Documents whose expiry has not passed (an expired one is gone, its removal pending)."""
    return or_(LibraryDocument.expires_at.is_(None), LibraryDocument.expires_at > utcnow())


class LibraryRepository:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    def _visible(self) -> Select[Library]:
        return select(Library).where(visible_to(self.tenant))

    async def get(self, library_id: str) -> Library | None:
        """A library the caller may read, or None."""
        found = await self.session.execute(self._visible().where(Library.id == library_id))
        return found.scalar_one_or_none()

    async def of_workspace(self, library_id: str) -> Library | None:
        """A library of the caller's workspace, whoever in it owns it (what the workspace's
        background jobs read)."""
        found = await self.session.execute(
            select(Library).where(
                Library.id == library_id, Library.workspace_id == self.tenant.workspace_id
            )
        )
        return found.scalar_one_or_none()

    async def role(self, library: Library) -> str | None:
        """The caller's role on `library`: Owner, Editor, Viewer, or None (no access)."""
        if library.organization_id != self.tenant.organization_id:
            return None
        if owns(self.tenant, library):
            return OWNER
        roles = await self.session.execute(
            select(LibrarySharing.role).where(
                LibrarySharing.library_id == library.id, names_caller(self.tenant)
            )
        )
        return best_role(roles.scalars())

    async def readable_ids(self, library_ids: Sequence[str]) -> list[str]:
        """Those of `library_ids` the caller may read, in the order given (each once)."""
        wanted = list(dict.fromkeys(i for i in library_ids if isinstance(i, str)))
        if not wanted:
            return []
        found = await self.session.execute(
            select(Library.id).where(Library.id.in_(wanted), visible_to(self.tenant))
        )
        readable = set(found.scalars())
        return [library_id for library_id in wanted if library_id in readable]

    async def document_names(self, ids: Sequence[str]) -> dict[str, str]:
        """`{document id: name}` of those of `ids` the caller may read (live documents of
        readable libraries)."""
        wanted = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        if not wanted:
            return {}
        found = await self.session.execute(
            select(LibraryDocument.id, LibraryDocument.name)
            .join(Library, Library.id == LibraryDocument.library_id)
            .where(LibraryDocument.id.in_(wanted), document_live(), visible_to(self.tenant))
        )
        return {document_id: name for document_id, name in found.all()}

    async def page(
        self,
        *,
        search: str | None,
        owned_only: bool,
        offset: int,
        limit: int,
        after: tuple[datetime, str] | None,
        with_total: bool,
    ) -> tuple[list[Library], int | None, bool]:
        """A page of the caller's libraries, newest first: the rows, the total (when asked)
        and whether more follow."""
        stmt = self._visible()
        if owned_only:
            stmt = stmt.where(owned_by(self.tenant))
        if search:
            stmt = stmt.where(contains(Library.name, search))
        total = None
        if with_total:
            counted = select(func.count()).select_from(stmt.order_by(None).subquery())
            total = int((await self.session.execute(counted)).scalar_one())
        if after is not None:
            stmt = stmt.where(
                keyset_after([Library.created_at, Library.id], list(after), descending=True)
            )
        else:
            stmt = stmt.offset(offset)
        ordered = stmt.order_by(Library.created_at.desc(), Library.id.desc()).limit(limit + 1)
        rows = list((await self.session.execute(ordered)).scalars())
        return rows[:limit], total, len(rows) > limit

    async def add(self, row: Library) -> Library:
        self.session.add(row)
        await self.session.flush()
        return row

    async def flush(self) -> None:
        await self.session.flush()

    async def sharings(self, library_ids: Sequence[str]) -> dict[str, list[LibrarySharing]]:
        """The sharings of these libraries, oldest first, by library."""
        if not library_ids:
            return {}
        found = await self.session.execute(
            select(LibrarySharing)
            .where(LibrarySharing.library_id.in_(list(library_ids)))
            .order_by(LibrarySharing.created_at, LibrarySharing.id)
        )
        by_library: dict[str, list[LibrarySharing]] = defaultdict(list)
        for row in found.scalars():
            by_library[row.library_id].append(row)
        return by_library

    async def sharing(self, library_id: str, kind: str, target: str) -> LibrarySharing | None:
        found = await self.session.execute(
            select(LibrarySharing).where(
                LibrarySharing.library_id == library_id,
                LibrarySharing.share_with_type == kind,
                LibrarySharing.share_with_uuid == target,
            )
        )
        return found.scalar_one_or_none()

    async def add_sharing(self, row: LibrarySharing) -> LibrarySharing:
        self.session.add(row)
        await self.session.flush()
        return row

    async def delete_sharing(self, row: LibrarySharing) -> None:
        await self.session.delete(row)
        await self.session.flush()

    async def workspace_in_org(self, workspace_id: str) -> bool:
        found = await self.session.execute(
            select(Workspace.id).where(
                Workspace.id == workspace_id,
                Workspace.organization_id == self.tenant.organization_id,
            )
        )
        return found.first() is not None

    async def user_in_org(self, user_id: str) -> bool:
        found = await self.session.execute(
            select(User.id).where(
                User.id == user_id, User.organization_id == self.tenant.organization_id
            )
        )
        return found.first() is not None

    async def lock(self, library_id: str) -> bool:
        """Take the library's row for this transaction (False if it is gone)."""
        changed = await self.session.execute(
            update(Library)
            .where(Library.id == library_id)
            .values(updated_at=Library.updated_at)
            .returning(Library.id)
            .execution_options(synchronize_session=False)
        )
        return changed.first() is not None

    async def count_documents(self, library_id: str, documents: int, size: int) -> bool:
        """Add to the library's counters (negative to remove); False if it is gone. Takes the
        library's row."""
        changed = await self.session.execute(
            update(Library)
            .where(Library.id == library_id)
            .values(
                nb_documents=Library.nb_documents + documents,
                total_size=Library.total_size + size,
                updated_at=utcnow(),
            )
            .returning(Library.id)
            .execution_options(synchronize_session=False)
        )
        return changed.first() is not None

    async def delete(self, library: Library) -> list[str]:
        """Delete the library, its documents and sharings (the caller removes the chunks);
        the blob keys its documents had."""
        await self.lock(library.id)
        removed = await self.session.execute(
            delete(LibraryDocument)
            .where(LibraryDocument.library_id == library.id)
            .returning(LibraryDocument.blob_key, LibraryDocument.text_key)
            .execution_options(synchronize_session=False)
        )
        keys = [key for row in removed.all() for key in row if key]
        await self.session.execute(
            delete(LibrarySharing)
            .where(LibrarySharing.library_id == library.id)
            .execution_options(synchronize_session=False)
        )
        await self.session.execute(
            delete(Library)
            .where(Library.id == library.id)
            .execution_options(synchronize_session=False)
        )
        return keys
