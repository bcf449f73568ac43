"""Connectors (MCP tool servers), their activations at each level and their credentials.

A connector belongs to an organization and was created in a workspace; who sees it follows its
visibility: `private` (its owner, a user, in that workspace), `shared_workspace` (that
workspace), `shared_org` (every workspace of the organization). Secrets (organization-level
headers, the OAuth2 client, every credential) are sealed (`core.crypto`), never stored plain.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime


class Connector(Base):
    __tablename__ = "connectors"
    __table_args__ = (
        UniqueConstraint("organization_id", "name", name="uq_connectors_org_name"),
        Index("ix_connectors_org_created", "organization_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    # The workspace it was created in: the one a private or shared_workspace connector lives in.
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64))
    title: Mapped[str | None] = mapped_column(Text, default=None)
    description: Mapped[str] = mapped_column(Text, default="")
    server: Mapped[str] = mapped_column(Text)
    protocol: Mapped[str] = mapped_column(String(16), default="mcp")
    icon_url: Mapped[str | None] = mapped_column(Text, default=None)
    system_prompt: Mapped[str | None] = mapped_column(Text, default=None)
    visibility: Mapped[str] = mapped_column(String(32))
    owner_type: Mapped[str] = mapped_column(String(16))  # user | workspace | org
    owner_id: Mapped[str | None] = mapped_column(String(200), default=None)
    creator_id: Mapped[str | None] = mapped_column(String(200), default=None)
    # Organization-level headers sent to the server: a sealed JSON object.
    headers_sealed: Mapped[str | None] = mapped_column(Text, default=None)
    # The OAuth2 client ({client_id, client_secret}), given or dynamically registered: sealed.
    oauth_client_sealed: Mapped[str | None] = mapped_column(Text, default=None)
    oauth_metadata: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    oauth_metadata_url: Mapped[str | None] = mapped_column(Text, default=None)
    # The authentication methods its creator declared (3.x `auth_methods`: their public part).
    auth_methods: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONDoc, default=None)
    tool_timeout_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    # What the server said of itself and its tools when last reached (the tools cache).
    server_card: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    tools: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONDoc, default=None)
    tools_refreshed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    tools_error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ConnectorActivation(Base):
    """A connector switched on or off at one level (the organization, a workspace, a user), with
    the tool lists that level applies."""

    __tablename__ = "connector_activations"

    connector_id: Mapped[str] = mapped_column(
        ForeignKey("connectors.id", ondelete="CASCADE"), primary_key=True
    )
    scope: Mapped[str] = mapped_column(String(16), primary_key=True)  # org | workspace | user
    scope_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    active: Mapped[bool] = mapped_column(Boolean)
    # include, exclude, requires_confirmation, skip_confirmation (lists of tool names or null).
    config: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ConnectorCredential(Base):
    """Named credentials of a connector at one level: OAuth2 tokens, a bearer token or headers,
    sealed. `version` grows with every write, so that a token refresh stores its result only
    over the tokens it refreshed."""

    __tablename__ = "connector_credentials"
    __table_args__ = (
        UniqueConstraint(
            "connector_id", "scope", "scope_id", "name", name="uq_connector_credentials_name"
        ),
    )

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    connector_id: Mapped[str] = mapped_column(
        ForeignKey("connectors.id", ondelete="CASCADE"), index=True
    )
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    scope: Mapped[str] = mapped_column(String(16))  # org | workspace | user
    scope_id: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(128))
    title: Mapped[str | None] = mapped_column(Text, default=None)
    auth_type: Mapped[str] = mapped_column(String(16))  # oauth2 | bearer | none (headers)
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    sealed: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    status: Mapped[str] = mapped_column(String(16), default="valid")  # valid | invalid | error
    status_reason: Mapped[str | None] = mapped_column(String(64), default=None)
    last_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
