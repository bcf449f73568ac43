"""SQL of workflows, deployments, workers and registrations, scoped to the caller's workspace.

Rows that workers create concurrently (two workers of a deployment registering at once) are
inserted with ON CONFLICT DO NOTHING on their natural keys, then read back: registration is
idempotent and never fails on a race.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.workflows.registry.tables import Deployment, DeploymentWorker, Registration, Workflow


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class RegistryRepository:
    def __init__(self, session: AsyncSession, tenant: Tenant, liveness: timedelta) -> None:
        self.session = session
        self.tenant = tenant
        self.liveness = liveness

    def _scoped(self, model: Any) -> sa.ColumnElement[bool]:
        return model.workspace_id == self.tenant.workspace_id  # type: ignore[no-any-return]

    def _alive_since(self) -> datetime:
        return utcnow() - self.liveness

    async def _insert_ignore(self, model: Any, keys: Sequence[str], **values: Any) -> None:
        postgres = self.session.get_bind().dialect.name == "postgresql"
        dialect: Any = postgresql if postgres else sqlite
        row = {
            "id": new_id(),
            "organization_id": self.tenant.organization_id,
            "workspace_id": self.tenant.workspace_id,
            **values,
        }
        await self.session.execute(
            dialect.insert(model).values(**row).on_conflict_do_nothing(index_elements=list(keys))
        )

    # -- workflows --------------------------------------------------------------------------

    async def workflow(self, identifier: str) -> Workflow | None:
        """A workflow by id (a UUID) or name."""
        by = Workflow.id if is_uuid(identifier) else Workflow.name
        stmt = sa.select(Workflow).where(self._scoped(Workflow), by == identifier)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def workflows_by_ids(self, ids: Sequence[str]) -> list[Workflow]:
        stmt = sa.select(Workflow).where(self._scoped(Workflow), Workflow.id.in_(list(ids)))
        return list((await self.session.execute(stmt)).scalars())

    async def ensure_workflow(self, name: str, **values: Any) -> Workflow:
        await self._insert_ignore(
            Workflow, ["workspace_id", "name"], name=name, display_name=name, tags=[], **values
        )
        row = await self.workflow(name)
        assert row is not None
        return row

    def active_workflow_ids(self) -> sa.Select[Any]:
        """Ids of the workflows that a live worker of some deployment serves."""
        return (
            sa.select(Registration.workflow_id)
            .join(DeploymentWorker, DeploymentWorker.deployment_id == Registration.deployment_id)
            .where(
                self._scoped(Registration),
                DeploymentWorker.last_seen_at >= self._alive_since(),
            )
        )

    async def is_workflow_active(self, workflow_id: str) -> bool:
        stmt = self.active_workflow_ids().where(Registration.workflow_id == workflow_id).limit(1)
        return (await self.session.execute(stmt)).first() is not None

    async def list_workflows(
        self,
        *,
        offset: int,
        limit: int,
        descending: bool,
        archived: bool | None,
        active_only: bool,
        include_technical: bool,
        tags: Sequence[str],
        search: str | None,
        deployment_names: Sequence[str],
        available_in_chat_assistant: bool | None,
    ) -> list[Workflow]:
        stmt = sa.select(Workflow).where(self._scoped(Workflow))
        if archived is not None:
            stmt = stmt.where(Workflow.archived.is_(archived))
        if not include_technical:
            stmt = stmt.where(Workflow.is_technical.is_(False))
        if active_only:
            stmt = stmt.where(Workflow.id.in_(self.active_workflow_ids()))
        if available_in_chat_assistant is not None:
            stmt = stmt.where(Workflow.available_in_chat_assistant.is_(available_in_chat_assistant))
        if search:
            pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            pattern += "%"
            stmt = stmt.where(
                sa.or_(
                    Workflow.name.ilike(pattern, escape="\\"),
                    Workflow.display_name.ilike(pattern, escape="\\"),
                )
            )
        if deployment_names:
            served = (
                sa.select(Registration.workflow_id)
                .join(Deployment, Deployment.id == Registration.deployment_id)
                .where(self._scoped(Deployment), Deployment.name.in_(list(deployment_names)))
            )
            stmt = stmt.where(Workflow.id.in_(served))
        rows = list((await self.session.execute(stmt)).scalars())
        # Tags (all of them) are matched here: JSON containment differs per database, and a
        # workspace's workflows are few.
        wanted = set(tags)
        rows = [r for r in rows if wanted.issubset(r.tags or [])]
        rows.sort(key=lambda r: (r.display_name.lower(), r.id), reverse=descending)
        return rows[offset : offset + limit]

    # -- deployments and workers ------------------------------------------------------------

    async def deployment(self, name: str) -> Deployment | None:
        stmt = sa.select(Deployment).where(self._scoped(Deployment), Deployment.name == name)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def deployment_by_id_or_name(self, identifier: str) -> Deployment | None:
        if not is_uuid(identifier):
            return await self.deployment(identifier)
        stmt = sa.select(Deployment).where(
            self._scoped(Deployment),
            sa.or_(Deployment.id == identifier, Deployment.name == identifier),
        )
        return (await self.session.execute(stmt)).scalars().first()

    async def ensure_deployment(self, name: str, location: dict[str, Any] | None) -> Deployment:
        await self._insert_ignore(Deployment, ["workspace_id", "name"], name=name)
        row = await self.deployment(name)
        assert row is not None
        if location is not None and row.location != location:
            row.location = location
        row.updated_at = utcnow()
        return row

    async def deployments(self) -> list[Deployment]:
        stmt = sa.select(Deployment).where(self._scoped(Deployment)).order_by(Deployment.name)
        return list((await self.session.execute(stmt)).scalars())

    async def workers_of(self, deployment_ids: Sequence[str]) -> list[DeploymentWorker]:
        stmt = (
            sa.select(DeploymentWorker)
            .where(
                self._scoped(DeploymentWorker),
                DeploymentWorker.deployment_id.in_(list(deployment_ids)),
            )
            .order_by(DeploymentWorker.name)
        )
        return list((await self.session.execute(stmt)).scalars())

    def worker_is_alive(self, worker: DeploymentWorker) -> bool:
        return worker.last_seen_at >= self._alive_since()

    async def beat(
        self, deployment: Deployment, worker_name: str, location: dict[str, Any] | None
    ) -> None:
        """Record that `worker_name` of `deployment` is alive now."""
        await self._insert_ignore(
            DeploymentWorker,
            ["deployment_id", "name"],
            deployment_id=deployment.id,
            name=worker_name,
            location=location,
        )
        values: dict[str, Any] = {"last_seen_at": utcnow()}
        if location is not None:
            values["location"] = location
        await self.session.execute(
            sa.update(DeploymentWorker)
            .where(
                DeploymentWorker.deployment_id == deployment.id,
                DeploymentWorker.name == worker_name,
            )
            .values(**values)
        )

    # -- registrations ----------------------------------------------------------------------

    async def ensure_registration(
        self, workflow: Workflow, deployment: Deployment, digest: str, definition: dict[str, Any]
    ) -> Registration:
        await self._insert_ignore(
            Registration,
            ["workflow_id", "deployment_id", "digest"],
            workflow_id=workflow.id,
            deployment_id=deployment.id,
            digest=digest,
            definition=definition,
        )
        stmt = sa.select(Registration).where(
            Registration.workflow_id == workflow.id,
            Registration.deployment_id == deployment.id,
            Registration.digest == digest,
        )
        row = (await self.session.execute(stmt)).scalar_one()
        row.updated_at = utcnow()
        return row

    async def registration(self, id_: str) -> tuple[Registration, Deployment] | None:
        if not is_uuid(id_):
            return None
        stmt = (
            sa.select(Registration, Deployment)
            .join(Deployment, Deployment.id == Registration.deployment_id)
            .where(self._scoped(Registration), Registration.id == id_)
        )
        row = (await self.session.execute(stmt)).first()
        return (row[0], row[1]) if row is not None else None

    async def registrations(
        self,
        *,
        workflow_ids: Sequence[str] | None = None,
        deployment_name: str | None = None,
        latest_only: bool = False,
    ) -> list[tuple[Registration, Deployment]]:
        """Registrations with their deployment, newest first; `latest_only` keeps the one in
        use of each (workflow, deployment)."""
        stmt = (
            sa.select(Registration, Deployment)
            .join(Deployment, Deployment.id == Registration.deployment_id)
            .where(self._scoped(Registration))
            .order_by(Registration.updated_at.desc(), Registration.id)
        )
        if workflow_ids is not None:
            stmt = stmt.where(Registration.workflow_id.in_(list(workflow_ids)))
        if deployment_name is not None:
            stmt = stmt.where(Deployment.name == deployment_name)
        pairs = [(r, d) for r, d in (await self.session.execute(stmt)).all()]
        if not latest_only:
            return pairs
        seen: set[tuple[str, str]] = set()
        latest = []
        for reg, dep in pairs:
            if (reg.workflow_id, reg.deployment_id) not in seen:
                seen.add((reg.workflow_id, reg.deployment_id))
                latest.append((reg, dep))
        return latest

    async def serving(self, workflow_id: str) -> list[tuple[Registration, Deployment, bool]]:
        """The registration in use of each deployment of a workflow (newest first), with its
        deployment and whether a worker of it is alive: one query, for routing."""
        alive = (
            sa.select(DeploymentWorker.id)
            .where(
                DeploymentWorker.deployment_id == Deployment.id,
                DeploymentWorker.last_seen_at >= self._alive_since(),
            )
            .exists()
        )
        stmt = (
            sa.select(Registration, Deployment, alive)
            .join(Deployment, Deployment.id == Registration.deployment_id)
            .where(self._scoped(Registration), Registration.workflow_id == workflow_id)
            .order_by(Registration.updated_at.desc(), Registration.id)
        )
        seen: set[str] = set()
        serving = []
        for registration, deployment, live in (await self.session.execute(stmt)).all():
            if deployment.id not in seen:
                seen.add(deployment.id)
                serving.append((registration, deployment, bool(live)))
        return serving

    async def live_deployment_ids(self, deployment_ids: Sequence[str]) -> set[str]:
        stmt = sa.select(DeploymentWorker.deployment_id).where(
            self._scoped(DeploymentWorker),
            DeploymentWorker.deployment_id.in_(list(deployment_ids)),
            DeploymentWorker.last_seen_at >= self._alive_since(),
        )
        return {row[0] for row in (await self.session.execute(stmt)).all()}
