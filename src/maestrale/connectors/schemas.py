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
# The SDK's AuthenticationType (3.x; OutboundAuthenticationType in 2.8, the same values).
AuthType = Literal["oauth2", "bearer", "none", "github_app", "slack_app"]
# The `{consumer_scope}` of the 3.x paths (and the fixed levels of 2.8's), and the level each is.
ConsumerScope = Literal["organization", "workspace", "user"]
LEVEL_OF: dict[str, str] = {"organization": "org", "workspace": "workspace", "user": "user"}
MAX_AUTH_METHODS = 8


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
    # 3.x: the scopes an authorization asks for (else the ones the server's metadata names).
    client_scopes: list[str] | None = Field(default=None, max_length=64)

    @field_validator("client_scopes")
    @classmethod
    def _scopes(cls, value: list[str] | None) -> list[str] | None:
        for scope in value or []:
            if not scope or len(scope) > 256 or any(c.isspace() or c == '"' for c in scope):
                raise ValueError(f"invalid OAuth2 scope {scope[:40]!r}")
        return value


class OAuthServerMetadata(BaseModel):
    """RFC 8414 metadata (the SDK's ExtendedOAuthServerMetadata), kept as given."""

    model_config = ConfigDict(extra="allow")

    issuer: str = Field(max_length=MAX_URL)
    authorization_endpoint: str = Field(max_length=MAX_URL)
    token_endpoint: str = Field(max_length=MAX_URL)


class GlobalHeaderValue(_In):
    """A connector-wide header of 3.x (`global_headers`): kept sealed with `headers`."""

    value: str = Field(max_length=8192)
    is_secret: bool = True


class AuthHeader(_In):
    """A header an authentication method needs (the SDK's ConnectorAuthenticationHeader)."""

    name: str = Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_-]+$")
    is_required: bool = True
    is_secret: bool = True


class AuthMethodIn(_In):
    """One way to authenticate to the connector's server, as 3.x declares it (`auth_methods`:
    BearerAuthMethod, NoneAuthMethod, OAuth2AuthMethod, AuthenticationMethodCreateOrUpdate):
    listed in `supported_auth_methods`. An OAuth2 method's client (`auth_data`, or
    `oauth2_metadata_secrets`) and metadata are the connector's."""

    method_type: Literal["oauth2", "bearer", "none"]
    headers: list[AuthHeader] | None = Field(default=None, max_length=MAX_HEADERS)
    grant_type: Literal["authorization_code", "client_credentials"] | None = None
    auth_data: AuthData | None = None
    oauth2_metadata_secrets: AuthData | None = None
    oauth2_server_metadata: OAuthServerMetadata | None = None

    @model_validator(mode="after")
    def _supported(self) -> AuthMethodIn:
        if self.grant_type == "client_credentials":
            raise ValueError(
                "the OAuth2 client_credentials grant is not supported: declare the "
                "authorization_code grant (a user authorizes through auth_url), or bearer"
            )
        if self.method_type != "oauth2" and (
            self.auth_data or self.oauth2_metadata_secrets or self.oauth2_server_metadata
        ):
            raise ValueError(f"a {self.method_type} method has no OAuth2 client or metadata")
        return self

    def public(self) -> dict[str, Any]:
        """What `supported_auth_methods` shows of it (no secret)."""
        return {
            "method_type": self.method_type,
            "headers": [h.model_dump() for h in self.headers] if self.headers else None,
            "grant_type": "authorization_code" if self.method_type == "oauth2" else None,
        }


class _ConnectorFields(_In):
    title: str | None = Field(default=None, max_length=256)
    icon_url: str | None = Field(default=None, max_length=MAX_URL)
    system_prompt: str | None = Field(default=None, max_length=32768)
    headers: dict[str, Any] | None = None
    global_headers: dict[str, GlobalHeaderValue] | None = None
    auth_data: AuthData | None = None
    auth_methods: list[AuthMethodIn] | None = Field(default=None, max_length=MAX_AUTH_METHODS)
    protocol: Literal["mcp"] | None = None
    # Maestrale's own: the limit of one tool call to this connector (default: the server's).
    tool_timeout_seconds: float | None = Field(default=None, gt=0, le=3600)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, Any] | None) -> dict[str, str] | None:
        return _check_headers(value)

    @field_validator("auth_methods")
    @classmethod
    def _one_each(cls, value: list[AuthMethodIn] | None) -> list[AuthMethodIn] | None:
        kinds = [m.method_type for m in value or []]
        if len(set(kinds)) != len(kinds):
            raise ValueError("one method of each method_type")
        if sum(1 for m in value or [] if m.auth_data or m.oauth2_metadata_secrets) > 1:
            raise ValueError("one OAuth2 client")
        return value

    @model_validator(mode="after")
    def _sent_headers(self) -> _ConnectorFields:
        both = set(self.headers or {}) & set(self.global_headers or {})
        if both:
            raise ValueError(f"header {sorted(both)[0]!r} is in both headers and global_headers")
        _check_headers(self.all_headers())
        if self.auth_data is not None and self._method_client() is not None:
            raise ValueError("auth_data and an auth_methods OAuth2 client are mutually exclusive")
        return self

    def all_headers(self) -> dict[str, str] | None:
        """The headers sent with every call: `headers` and 3.x's `global_headers`."""
        if self.headers is None and self.global_headers is None:
            return None
        merged = dict(self.headers or {})
        merged.update({k: v.value for k, v in (self.global_headers or {}).items()})
        return merged

    def headers_given(self) -> bool:
        return bool({"headers", "global_headers"} & self.model_fields_set)

    def _method_client(self) -> AuthData | None:
        return next(
            (
                m.auth_data or m.oauth2_metadata_secrets
                for m in self.auth_methods or []
                if m.auth_data or m.oauth2_metadata_secrets
            ),
            None,
        )

    def oauth_client(self) -> AuthData | None:
        """The OAuth2 client given (2.8's `auth_data`, or 3.x's in `auth_methods`)."""
        return self.auth_data or self._method_client()

    def method_metadata(self) -> OAuthServerMetadata | None:
        return next(
            (m.oauth2_server_metadata for m in self.auth_methods or [] if m.oauth2_server_metadata),
            None,
        )

    def declared_methods(self) -> list[dict[str, Any]] | None:
        return [m.public() for m in self.auth_methods] if self.auth_methods else None


class ConnectorCreate(_ConnectorFields):
    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(max_length=4096)
    server: str = Field(min_length=1, max_length=MAX_URL)
    visibility: Visibility | None = None
    oauth2_server_metadata: OAuthServerMetadata | None = None
    oauth2_server_metadata_url: str | None = Field(default=None, max_length=MAX_URL)

    @model_validator(mode="after")
    def _one_metadata_source(self) -> ConnectorCreate:
        given = [self.oauth2_server_metadata, self.method_metadata()]
        if sum(m is not None for m in given) > 1:
            raise ValueError(
                "oauth2_server_metadata and an auth_methods oauth2_server_metadata are mutually "
                "exclusive"
            )
        if any(m is not None for m in given) and self.oauth2_server_metadata_url:
            raise ValueError(
                "oauth2_server_metadata and oauth2_server_metadata_url are mutually exclusive"
            )
        return self

    def metadata(self) -> OAuthServerMetadata | None:
        return self.oauth2_server_metadata or self.method_metadata()


class ConnectorUpdate(_ConnectorFields):
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    description: str | None = Field(default=None, max_length=4096)
    server: str | None = Field(default=None, min_length=1, max_length=MAX_URL)


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

    @field_validator("oauth", mode="before")
    @classmethod
    def _tokens(cls, value: Any) -> Any:
        if isinstance(value, dict) and "access_token" not in value and "client_id" in value:
            raise ValueError(
                "OAuth2 client credentials (3.x's client_credentials grant) are not supported: "
                "give OAuth2 tokens (access_token, refresh_token), a bearer_token, or authorize "
                "through auth_url"
            )
        return value

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
