"""Fine-tuned models: workspace rows pointing at a base model (root) and the job that made them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class FineTunedModel(WorkspaceScoped, Base):
    __tablename__ = "fine_tuned_models"

    root: Mapped[str] = mapped_column(String(200))
    root_version: Mapped[str] = mapped_column(String(50), default="")
    job: Mapped[str] = mapped_column(String(36))
    model_type: Mapped[str] = mapped_column(String(16), default="completion")
    name: Mapped[str | None] = mapped_column(String(200), default=None)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    max_context_length: Mapped[int] = mapped_column(Integer, default=32768)
    capabilities: Mapped[dict[str, bool]] = mapped_column(JSONDoc, default=dict)
    classifier_targets: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    artifact: Mapped[str | None] = mapped_column(String(500), default=None)
    # An `ArtifactFormat`: how the artifact is served (None: no artifact, served as its base).
    artifact_format: Mapped[str | None] = mapped_column(String(16), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
