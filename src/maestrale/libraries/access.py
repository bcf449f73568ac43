"""Who may do what with a library.

A caller (a key: its organization, its workspace, and its user when it has one) is a library's
owner when the library belongs to the caller's workspace, or to the caller's user in that
workspace. Otherwise the library's sharings that name the caller's user, workspace or
organization give it their best role: Viewer reads, Editor also writes documents. Only the
owner shares, unshares and deletes the library. A library of another organization, or one
nothing gives the caller, is not found (404), whatever its id.

`readable_library_ids` and `document_names` are what the document_library tool reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, and_, exists, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.libraries.tables import Library, LibraryDocument, LibrarySharing

VIEWER, EDITOR, OWNER = "Viewer", "Editor", "Owner"
RANK = {VIEWER: 1, EDITOR: 2, OWNER: 3}
USER, WORKSPACE, ORG = "User", "Workspace", "Org"


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


async def role_of(session: AsyncSession, tenant: Tenant, library: Library) -> str | None:
    """The caller's role on `library`: Owner, Editor, Viewer, or None (no access)."""
    if library.organization_id != tenant.organization_id:
        return None
    own_user = tenant.user_id is not None and library.owner_id == tenant.user_id
    if library.workspace_id == tenant.workspace_id and (
        library.owner_type == WORKSPACE or (library.owner_type == USER and own_user)
    ):
        return OWNER
    roles = await session.execute(
        select(LibrarySharing.role).where(
            LibrarySharing.library_id == library.id, names_caller(tenant)
        )
    )
    best = max((str(role) for role in roles.scalars()), key=lambda r: RANK.get(r, 0), default=None)
    return best if best in RANK else None


async def readable_library_ids(
    session: AsyncSession, tenant: Tenant, library_ids: Sequence[str]
) -> list[str]:
    """Those of `library_ids` the caller may read, in the order given (each once)."""
    wanted = list(dict.fromkeys(i for i in library_ids if isinstance(i, str)))
    if not wanted:
        return []
    found = await session.execute(
        select(Library.id).where(Library.id.in_(wanted), visible_to(tenant))
    )
    readable = set(found.scalars())
    return [library_id for library_id in wanted if library_id in readable]


async def document_names(
    session: AsyncSession, tenant: Tenant, ids: Sequence[str]
) -> dict[str, str]:
    """`{document id: name}` of those of `ids` the caller may read (in readable libraries)."""
    wanted = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
    if not wanted:
        return {}
    found = await session.execute(
        select(LibraryDocument.id, LibraryDocument.name)
        .join(Library, Library.id == LibraryDocument.library_id)
        .where(LibraryDocument.id.in_(wanted), document_live(), visible_to(tenant))
    )
    return {document_id: name for document_id, name in found.all()}
