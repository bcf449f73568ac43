"""Who a standard key belongs to: its user, or its service account, in its workspace and
organization. A key with neither (one an operator made for the workspace itself) names no
principal: the two identity routes refuse it with 403 `no_principal`, and its organization and
workspace are still listed."""

from __future__ import annotations

from maestrale.admin.identity.repository import IdentityRepository
from maestrale.admin.identity.schemas import (
    ApiKeyRef,
    IdName,
    UserIdentityOut,
    UserWorkspaceOut,
    WhoamiOrganization,
    WhoamiOut,
    WhoamiServiceAccount,
    WhoamiUser,
)
from maestrale.core.auth.principal import Principal
from maestrale.core.auth.tables import ServiceAccount, User, Workspace
from maestrale.core.errors import Forbidden


class NoPrincipal(Forbidden):
    code = "no_principal"


class IdentityService:
    def __init__(self, repo: IdentityRepository, principal: Principal) -> None:
        self.repo = repo
        self.principal = principal

    async def _who(self) -> User | ServiceAccount:
        principal = self.principal
        found: User | ServiceAccount | None = None
        if principal.service_account_id is not None:
            found = await self.repo.account(principal.service_account_id)
        elif principal.user_id is not None:
            found = await self.repo.user(principal.user_id)
        if found is None:
            raise NoPrincipal(
                "this key belongs to no user and no service account: it acts for its workspace "
                "itself (GET /v1/users/me/workspaces names the workspace)"
            )
        return found

    async def _workspace(self) -> Workspace | None:
        if self.principal.workspace_id is None:
            return None
        return await self.repo.workspace(self.principal.workspace_id)

    async def _organization(self) -> IdName | None:
        org = await self.repo.organization(self.principal.organization_id)
        return None if org is None else IdName(id=org.id, name=org.name)

    async def identity(self) -> UserIdentityOut:
        """The user-centric identity; a service account has no personal profile (nulls)."""
        who = await self._who()
        key = await self.repo.key(self.principal.key_id)
        ws = await self._workspace()
        user = who if isinstance(who, User) else None
        return UserIdentityOut(
            id=who.id,
            email=user.email if user else None,
            first_name=user.first_name if user else None,
            last_name=user.last_name if user else None,
            workspace=None if ws is None else IdName(id=ws.id, name=ws.name),
            organization=await self._organization(),
            api_key=None if key is None else ApiKeyRef(id=key.id, name=key.name or None),
        )

    async def whoami(self) -> WhoamiOut:
        who = await self._who()
        principal: WhoamiUser | WhoamiServiceAccount
        if isinstance(who, User):
            principal = WhoamiUser(
                id=who.id, email=who.email, first_name=who.first_name, last_name=who.last_name
            )
        else:
            principal = WhoamiServiceAccount(service_account_id=who.id, name=who.name)
        org = await self._organization()
        ws = await self._workspace()
        return WhoamiOut(
            principal=principal,
            organization=None if org is None else WhoamiOrganization(id=org.id, name=org.name),
            workspace=None if ws is None else IdName(id=ws.id, name=ws.name),
        )

    async def organizations(self, offset: int, limit: int) -> list[IdName]:
        """A key's user belongs to one organization, the key's."""
        org = await self._organization()
        return ([org] if org else [])[offset : offset + limit]

    async def workspaces(
        self, organization_id: str | None, offset: int, limit: int
    ) -> list[UserWorkspaceOut]:
        """The user's workspaces (a service account's or a workspace key's: its one)."""
        principal = self.principal
        if organization_id is not None and organization_id != principal.organization_id:
            return []
        if principal.user_id is not None and principal.service_account_id is None:
            rows = await self.repo.member_workspaces(
                principal.organization_id, principal.user_id, offset, limit
            )
        else:
            ws = await self._workspace()
            rows = ([ws] if ws else [])[offset : offset + limit]
        return [
            UserWorkspaceOut(id=ws.id, name=ws.name, organization_id=ws.organization_id)
            for ws in rows
        ]
