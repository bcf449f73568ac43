"""Sharing a library with a user, a workspace or the organization, as Viewer or Editor.

Only the library's owner shares and unshares; anyone who may read the library may list who has
access (the owner first). A library is never shared outside its organization: a target of
another organization (or none) is 404, as any foreign id; `org_id`, when sent, must be the
library's organization. The owner's own access is not a sharing and cannot be changed.
"""

from __future__ import annotations

from maestrale.core.clock import utcnow
from maestrale.core.errors import NotFound
from maestrale.core.ids import new_id
from maestrale.libraries.access import ORG, OWNER, USER, WORKSPACE
from maestrale.libraries.errors import InvalidSharing, SharingNotFound
from maestrale.libraries.schemas import SharingDeleteIn, SharingIn, SharingList, SharingOut
from maestrale.libraries.service import LibraryService
from maestrale.libraries.tables import Library, LibrarySharing


class SharingService(LibraryService):
    async def accesses(self, library_id: str) -> SharingList:
        row = await self.library(library_id)
        sharings = (await self.repo.sharings([row.id])).get(row.id, [])
        return SharingList(
            data=[SharingOut.owner(row), *(SharingOut.of(sharing) for sharing in sharings)]
        )

    async def share(self, library_id: str, body: SharingIn) -> SharingOut:
        """Give the target `body.level` on the library (create or change its sharing)."""
        row = await self.library(library_id, OWNER)
        await self._check_target(row, body.share_with_type, body.share_with_uuid, body.org_id)
        now = utcnow()
        found = await self.repo.sharing(row.id, body.share_with_type, body.share_with_uuid)
        if found is None:
            found = await self.repo.add_sharing(
                LibrarySharing(
                    id=new_id(),
                    organization_id=row.organization_id,
                    workspace_id=row.workspace_id,
                    library_id=row.id,
                    share_with_type=body.share_with_type,
                    share_with_uuid=body.share_with_uuid,
                    role=body.level,
                    shared_by=self.tenant.user_id,
                    created_at=now,
                    updated_at=now,
                )
            )
        else:
            found.role, found.updated_at = body.level, now
            await self.repo.flush()
        return SharingOut.of(found)

    async def unshare(self, library_id: str, body: SharingDeleteIn) -> SharingOut:
        """Remove the target's sharing; the sharing as it was."""
        row = await self.library(library_id, OWNER)
        self._check_org(row, body.org_id)
        found = await self.repo.sharing(row.id, body.share_with_type, body.share_with_uuid)
        if found is None:
            raise SharingNotFound(
                f"library {row.id} is not shared with {body.share_with_type} "
                f"{body.share_with_uuid!r}",
                param="share_with_uuid",
            )
        shown = SharingOut.of(found)
        await self.repo.delete_sharing(found)
        return shown

    def _check_org(self, library: Library, org_id: str | None) -> None:
        if org_id is not None and org_id != library.organization_id:
            raise InvalidSharing(
                "a library cannot be shared outside its organization", param="org_id"
            )

    async def _check_target(
        self, library: Library, kind: str, target: str, org_id: str | None
    ) -> None:
        self._check_org(library, org_id)
        if kind == library.owner_type and target == library.owner_id:
            raise InvalidSharing("the owner's access cannot be changed", param="share_with_uuid")
        if kind == ORG:
            exists = target == library.organization_id
        elif kind == WORKSPACE:
            exists = await self.repo.workspace_in_org(target)
        else:
            assert kind == USER
            exists = await self.repo.user_in_org(target)
        if not exists:
            raise NotFound(
                f"{kind.lower()} {target!r} not found in the library's organization",
                code=f"{kind.lower()}_not_found",
                param="share_with_uuid",
            )
