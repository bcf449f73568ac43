"""What every admin service works with: the request's unit of work, the calling admin key's
organization, the audit log and the caches to invalidate once the change is committed; and the
paging of admin lists."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin.audit import AuditLog
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import AdminAuth
from maestrale.core.auth.invalidation import Invalidation, Invalidator
from maestrale.core.auth.principal import Principal
from maestrale.core.pagination import MAX_PAGE_SIZE, PageParams
from maestrale.core.routing import Work
from maestrale.core.uow import UnitOfWork


class AdminContext:
    def __init__(
        self,
        work: UnitOfWork,
        principal: Principal,
        invalidator: Invalidator,
        actor: str = "admin_api",
    ) -> None:
        self.work = work
        self.principal = principal
        self.invalidator = invalidator
        self.actor = actor

    @property
    def session(self) -> AsyncSession:
        return self.work.session

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
        AuditLog(self.session).record(
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

    def invalidate(self, *items: Invalidation) -> None:
        """Drop the affected cache entries here and on every replica once the change has
        committed.

        Only then: a replica that re-read a key before the commit would cache it as valid. A
        rolled-back change publishes nothing.
        """
        if items:
            self.work.on_commit(partial(self.invalidator.publish, items))


async def admin_context(request: Request, principal: AdminAuth, work: Work) -> AdminContext:
    invalidator: Invalidator = app_services(request).invalidator
    return AdminContext(work, principal, invalidator)


Admin = Annotated[AdminContext, Depends(admin_context)]


async def paging(
    page: Annotated[int, Query(ge=1, description="page number, from 1")] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 100,
) -> PageParams:
    """Admin lists: `page` counted from 1, `page_size` up to 1000 (out of range: a 422)."""
    return PageParams(page, page_size, first_page=1)


Pages = Annotated[PageParams, Depends(paging)]
