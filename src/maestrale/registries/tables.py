"""Prompts and skills: one object row per name (its metadata and sharing), its immutable
versions, and the aliases that point at them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class RegistryObject(WorkspaceScoped, Base):
    """A prompt or a skill (`kind`) of a workspace: a stable name, display metadata, who may
    read and write it, and the number of its latest version."""

    __tablename__ = "registry_objects"
    __table_args__ = (
        UniqueConstraint("workspace_id", "kind", "name", name="uq_registry_objects_ws_kind_name"),
        Index("ix_registry_objects_ws_kind_created", "workspace_id", "kind", "created_at", "id"),
        Index("ix_registry_objects_ws_kind_updated", "workspace_id", "kind", "updated_at", "id"),
    )

    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(128))
    title: Mapped[str | None] = mapped_column(Text, default=None)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    # `private` (only its creator's user reads it) or `workspace`.
    sharing_scope: Mapped[str] = mapped_column(String(16), default="workspace")
    # `reader` (read-only for the workspace's other users) or `writer`.
    workspace_relation: Mapped[str] = mapped_column(String(16), default="writer")
    latest_version: Mapped[int] = mapped_column(Integer, default=1)
    created_by: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RegistryVersion(Base):
    """One immutable version of an object: its definition (the SDK's wire shape) and the hash
    that finds an identical one; only `notes` change after creation."""

    __tablename__ = "registry_versions"

    object_id: Mapped[str] = mapped_column(
        ForeignKey("registry_objects.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    definition: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    definition_hash: Mapped[str] = mapped_column(String(64))
    notes: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RegistryAlias(Base):
    """A label of one version, unique per object: setting it elsewhere moves it."""

    __tablename__ = "registry_aliases"
    object_id: Mapped[str] = mapped_column(
        ForeignKey("registry_objects.id", ondelete="CASCADE"), primary_key=True
    )
    alias: Mapped[str] = mapped_column(String(128), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
