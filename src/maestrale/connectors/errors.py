"""Errors of the connectors group (the platform's error body, with codes of their own)."""

from __future__ import annotations

from maestrale.core.errors import BadRequest, Conflict, Forbidden, NotFound, UpstreamError


class ConnectorNotFound(NotFound):
    code = "connector_not_found"


class ConnectorNameTaken(Conflict):
    code = "connector_name_taken"


class ConnectorForbidden(Forbidden):
    code = "connector_forbidden"


class ShareConflict(Conflict):
    """Shared already, or not shared where it is to be unshared."""

    code = "connector_share_conflict"


class CredentialsNotFound(NotFound):
    code = "credentials_not_found"


class CredentialsMoved(BadRequest):
    """Credentials changed since an OAuth2 authorization started: it was completed already (a
    `state` is good once), or another one was completed first."""

    code = "oauth_state_used"


class ConnectorInactive(BadRequest):
    code = "connector_inactive"


class ToolServerFailed(UpstreamError):
    """The connector's server failed a direct tool call (unreachable, timed out, refused our
    credentials, or answered something that is not MCP)."""

    code = "connector_server_error"
