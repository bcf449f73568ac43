"""The audit log: who changed what, when, with the state before and after (never a secret),
written in the same transaction as the change."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin.tables import AuditEntry
from maestrale.core.clock import iso
from maestrale.core.logs import request_id_var


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    return value


class AuditLog:
    """The audit entries of one transaction (`session`)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def record(
        self,
        *,
        organization_id: str,
        actor: str,
        action: str,
        target_type: str,
        target_id: str | None,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        actor_key_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> None:
        self.session.add(
            AuditEntry(
                organization_id=organization_id,
                actor_key_id=actor_key_id,
                actor_user_id=actor_user_id,
                actor=actor,
                action=action,
                target_type=target_type,
                target_id=target_id,
                before=None if before is None else jsonable(before),
                after=None if after is None else jsonable(after),
                request_id=request_id_var.get(),
            )
        )
