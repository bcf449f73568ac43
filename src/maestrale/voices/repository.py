"""SQL of custom voices, scoped to the caller's workspace (another workspace's voice is simply
not found). Two orders of the same rows: by offset for `/v1` and by a (created_at, id) keyset
for `/v2`, newest first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Select, Text, and_, cast, func, or_

from maestrale.core.repository import WorkspaceRepository
from maestrale.voices.tables import CustomVoice


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True, slots=True)
class VoiceFilter:
    """The `/v2` filters (empty: no filter)."""

    genders: Sequence[str] = ()
    languages: Sequence[str] = ()
    query: str | None = None
    kind: str | None = None


def _language_match(language: str) -> ColumnElement[bool]:
    # `languages` is a JSON list of short codes: match the quoted element in its text, which
    # is the same on SQLite (JSON as text) and Postgres (JSONB cast to text).
    pattern = f'%"{_like_escape(language.lower())}"%'
    return func.lower(cast(CustomVoice.languages, Text)).like(pattern, escape="\\")


class VoiceRepository(WorkspaceRepository[CustomVoice]):
    model = CustomVoice

    def _filtered(self, where: VoiceFilter) -> Select[CustomVoice]:
        stmt = self.select()
        if where.genders:
            stmt = stmt.where(CustomVoice.gender.in_(list(where.genders)))
        if where.languages:
            stmt = stmt.where(or_(*(_language_match(code) for code in where.languages)))
        if where.query:
            stmt = stmt.where(CustomVoice.name.ilike(f"%{_like_escape(where.query)}%", escape="\\"))
        if where.kind:
            stmt = stmt.where(CustomVoice.kind == where.kind)
        return stmt

    async def page(self, offset: int, limit: int) -> tuple[list[CustomVoice], int]:
        """Rows `offset`..`offset+limit` newest first, and the total."""
        stmt = self.select()
        total = await self.count(stmt)
        ordered = stmt.order_by(CustomVoice.created_at.desc(), CustomVoice.id.desc())
        return await self.list(ordered.offset(offset).limit(limit)), total

    async def after(
        self, where: VoiceFilter, cursor: tuple[datetime, str] | None, limit: int
    ) -> list[CustomVoice]:
        """Up to `limit` rows matching `where`, newest first, after the row `cursor` names."""
        stmt = self._filtered(where)
        if cursor is not None:
            created_at, id_ = cursor
            stmt = stmt.where(
                or_(
                    CustomVoice.created_at < created_at,
                    and_(CustomVoice.created_at == created_at, CustomVoice.id < id_),
                )
            )
        ordered = stmt.order_by(CustomVoice.created_at.desc(), CustomVoice.id.desc())
        return await self.list(ordered.limit(limit))
