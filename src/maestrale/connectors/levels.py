"""The levels a connector is set at (the organization, the workspace, the user) and the caller's
rights at each: which level is its own, and whether its roles let it change a connector, its
activation or its credentials there. Both the connector service and the keychain ask."""

from __future__ import annotations

from maestrale.admin import roles as role_catalog
from maestrale.connectors.errors import ConnectorForbidden
from maestrale.connectors.repository import ConnectorRepository
from maestrale.connectors.tables import Connector
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import BadRequest

# Least specific first, the order in which their activations merge.
LEVELS = ("org", "workspace", "user")
# Workspace roles that hold the ShareConnectorToWorkspace permission.
SHARERS = frozenset(
    {"contributor", "dev_contributor", "workspace_contributor", role_catalog.WS_ADMIN}
)


class LevelRights:
    """The caller's rights over connectors at each level; its roles are read when a rule needs
    them."""

    def __init__(self, repo: ConnectorRepository, tenant: Tenant) -> None:
        self.repo = repo
        self.tenant = tenant

    def scope_id(self, scope: str) -> str:
        """The id of the caller's own `scope` level (a user level needs a user)."""
        if scope == "org":
            return self.tenant.organization_id
        if scope == "workspace":
            return self.tenant.workspace_id
        if self.tenant.user_id is None:
            raise BadRequest("user-level settings need a user: this key has none", code="no_user")
        return self.tenant.user_id

    async def scope_id_to_change(self, scope: str, what: str) -> str:
        """The id of the caller's `scope` level, once it is allowed to change it: a user its
        own; a workspace admin (or a key without a user, which acts for its workspace) its
        workspace; an organization admin the organization."""
        scope_id = self.scope_id(scope)
        if scope == "user":
            return scope_id
        org_roles, ws_roles = await self.repo.roles()
        if role_catalog.ORG_ADMIN in org_roles:
            return scope_id
        if scope == "workspace" and (
            self.tenant.user_id is None or role_catalog.WS_ADMIN in ws_roles
        ):
            return scope_id
        raise ConnectorForbidden(
            f"only an {'organization' if scope == 'org' else 'workspace'} admin can {what} at "
            f"the {scope} level"
        )

    async def require_org_admin(self, what: str) -> None:
        """Refuse (403) a caller that is not an organization admin."""
        org_roles, _ = await self.repo.roles()
        if role_catalog.ORG_ADMIN not in org_roles:
            raise ConnectorForbidden(f"only an organization admin can {what}")

    async def require_manager(self, row: Connector, what: str) -> None:
        """A private connector is managed by its owner; a shared one by its creator or an
        admin of its level."""
        if row.visibility == "private" or row.creator_id == self.tenant.user_id:
            return
        org_roles, ws_roles = await self.repo.roles()
        if role_catalog.ORG_ADMIN in org_roles:
            return
        if row.visibility == "shared_workspace" and (
            self.tenant.user_id is None or role_catalog.WS_ADMIN in ws_roles
        ):
            return
        raise ConnectorForbidden(
            f"only the connector's creator or an admin can {what} connector {row.name!r}"
        )

    async def require_sharer(self) -> None:
        """Refuse (403) a caller whose roles lack the ShareConnectorToWorkspace permission."""
        org_roles, ws_roles = await self.repo.roles()
        if not SHARERS.intersection(ws_roles) and role_catalog.ORG_ADMIN not in org_roles:
            raise ConnectorForbidden(
                "sharing a connector needs the ShareConnectorToWorkspace permission of the "
                "workspace role (contributor, dev_contributor, workspace_contributor or "
                "workspace_admin)"
            )
