"""What every admin handler works with: the request's session, the calling admin key's
organization, the audit log and the caches to invalidate once the change is committed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin.audit import audit_entry
from maestrale.core.auth.dependencies import AdminAuth
from maestrale.core.auth.invalidation import Invalidation, Invalidator
from maestrale.core.auth.principal import Principal
from maestrale.core.pagination import MAX_PAGE_SIZE
from maestrale.core.routing import DbSession


@dataclass
class AdminContext:
    session: AsyncSession
    principal: Principal
    invalidator: Invalidator
    actor: str = "admin_api"
    _pending: list[Invalidation] = field(default_factory=list)

    @property
    def organization_id(self) -> str:
        return self.principal.organization_id

    def audit(
        self,
        action: str,
        target_type: str,
        target_id: str | None,
        *,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
    ) -> None:
        """Record one change in the same transaction as the change itself."""
        self.session.add(
            audit_entry(
                organization_id=self.organization_id,
                actor=self.actor,
                action=action,
                target_type=target_type,
                target_id=target_id,
                before=before,
                after=after,
                actor_key_id=self.principal.key_id or None,
                actor_user_id=self.principal.user_id,
            )
        )

    def invalidate(self, *items: Invalidation) -> None:
        self._pending.extend(items)

    async def commit(self) -> None:
        """Commit, then drop the affected cache entries here and on every replica.

        In that order: a replica that re-read a key before the commit would cache it as valid.
        """
        await self.session.commit()
        pending, self._pending = self._pending, []
        await self.invalidator.publish(pending)


async def admin_context(request: Request, principal: AdminAuth, session: DbSession) -> AdminContext:
    return AdminContext(session, principal, request.app.state.invalidator)


Admin = Annotated[AdminContext, Depends(admin_context)]


@dataclass(frozen=True, slots=True)
class Paging:
    """Admin lists: `page` counted from 1, `page_size` up to 1000."""

    page: int
    page_size: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size


async def paging(
    page: Annotated[int, Query(ge=1, description="page number, from 1")] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 100,
) -> Paging:
    return Paging(page, page_size)


Pages = Annotated[Paging, Depends(paging)]
