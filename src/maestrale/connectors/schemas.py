"""Wire models of the /v1/connectors group (the SDK's CreateConnectorRequest,
UpdateConnectorRequest, ToolExecutionConfiguration, CredentialsCreateOrUpdate,
ConnectorCallToolRequest, AuthURLResponse, MessageResponse). Responses are built as JSON by
`shapes`, with every key the SDK requires."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
CREDENTIALS_NAME = r"^[A-Za-z0-9_.-]{1,128}$"
MAX_URL = 2048
MAX_HEADERS = 64
MAX_TOOL_LIST = 512

Visibility = Literal["shared_org", "shared_workspace", "private"]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _check_headers(value: dict[str, Any] | None) -> dict[str, str] | None:
    """Header names and values a request may send: strings (numbers and booleans as text),
    no line breaks (which would split the request)."""
    if value is None:
        return None
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    out: dict[str, str] = {}
    for name, raw in value.items():
        if not name or len(name) > 256 or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError(f"invalid header name {name[:40]!r}")
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise ValueError(f"header {name!r} must have a string value")
        text = str(raw)
        if len(text) > 8192 or any(c in text for c in "\r\n\0"):
            raise ValueError(f"header {name!r} has an invalid value")
        out[name] = text
    return out


class AuthData(_In):
    client_id: str = Field(min_length=1, max_length=512)
    client_secret: str | None = Field(default=None, max_length=4096)


class OAuthServerMetadata(BaseModel):
    """RFC 8414 metadata (the SDK's ExtendedOAuthServerMetadata), kept as given."""

    model_config = ConfigDict(extra="allow")

    issuer: str = Field(max_length=MAX_URL)
    authorization_endpoint: str = Field(max_length=MAX_URL)
    token_endpoint: str = Field(max_length=MAX_URL)


class _ConnectorFields(_In):
    title: str | None = Field(default=None, max_length=256)
    icon_url: str | None = Field(default=None, max_length=MAX_URL)
    system_prompt: str | None = Field(default=None, max_length=32768)
    headers: dict[str, Any] | None = None
    auth_data: AuthData | None = None
    # Maestrale's own: the limit of one tool call to this connector (default: the server's).
    tool_timeout_seconds: float | None = Field(default=None, gt=0, le=3600)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, Any] | None) -> dict[str, str] | None:
        return _check_headers(value)


class ConnectorCreate(_ConnectorFields):
    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(max_length=4096)
    server: str = Field(min_length=1, max_length=MAX_URL)
    visibility: Visibility | None = None
    oauth2_server_metadata: OAuthServerMetadata | None = None
    oauth2_server_metadata_url: str | None = Field(default=None, max_length=MAX_URL)

    @model_validator(mode="after")
    def _one_metadata_source(self) -> ConnectorCreate:
        if self.oauth2_server_metadata is not None and self.oauth2_server_metadata_url:
            raise ValueError(
                "oauth2_server_metadata and oauth2_server_metadata_url are mutually exclusive"
            )
        return self


class ConnectorUpdate(_ConnectorFields):
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    description: str | None = Field(default=None, max_length=4096)
    server: str | None = Field(default=None, min_length=1, max_length=MAX_URL)
    protocol: Literal["mcp"] | None = None


ToolNames = list[str] | None


class ToolExecutionConfig(_In):
    """The tool lists one level (organization, workspace, user) applies to a connector:
    `include` (only these), `exclude`, `requires_confirmation` and `skip_confirmation` (tool
    names, or `{"read_only": bool}` for the tools whose annotations say so)."""

    include: list[str] | None = Field(default=None, max_length=MAX_TOOL_LIST)
    exclude: list[str] | None = Field(default=None, max_length=MAX_TOOL_LIST)
    requires_confirmation: list[str] | dict[str, Any] | None = None
    skip_confirmation: list[str] | dict[str, Any] | None = None

    @field_validator("requires_confirmation", "skip_confirmation")
    @classmethod
    def _selector(cls, value: list[str] | dict[str, Any] | None) -> Any:
        if value is None or isinstance(value, list):
            if value is not None and len(value) > MAX_TOOL_LIST:
                raise ValueError(f"at most {MAX_TOOL_LIST} tool names")
            return value
        if set(value) == {"read_only"} and isinstance(value["read_only"], bool | None):
            return value
        raise ValueError(
            'a list of tool names or {"read_only": true|false}; logical expressions are not '
            "supported"
        )

    @model_validator(mode="after")
    def _include_or_exclude(self) -> ToolExecutionConfig:
        if self.include is not None and self.exclude is not None:
            raise ValueError("include and exclude are mutually exclusive")
        return self

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class OAuthTokenIn(_In):
    access_token: str = Field(min_length=1, max_length=16384)
    token_type: str | None = Field(default="Bearer", max_length=32)
    expires_in: int | None = Field(default=None, ge=0, le=10 * 365 * 86400)
    scope: str | None = Field(default=None, max_length=4096)
    refresh_token: str | None = Field(default=None, max_length=16384)
    expires_at: Any = None


class ConnectionCredentialsIn(_In):
    oauth: OAuthTokenIn | None = None
    headers: dict[str, Any] | None = None
    bearer_token: str | None = Field(default=None, min_length=1, max_length=16384)
    github_installation_id: str | None = Field(default=None, max_length=256)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, Any] | None) -> dict[str, str] | None:
        return _check_headers(value)


class CredentialsIn(_In):
    name: str = Field(pattern=CREDENTIALS_NAME)
    title: str | None = Field(default=None, max_length=256)
    is_default: bool | None = None
    credentials: ConnectionCredentialsIn | None = None


class CallToolIn(_In):
    arguments: dict[str, Any] | None = None


class MessageOut(BaseModel):
    message: str


class AuthUrlOut(BaseModel):
    auth_url: str
    ttl: int
