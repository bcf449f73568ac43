"""Business rules of conversations: start on a model or an agent, append, restart from an entry
(the reads are in `reads`). Model turns run in `runtime`; this module decides what is stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from maestrale.agents.service import AgentService
from maestrale.conversations import confirmations, runtime
from maestrale.conversations import entries as E
from maestrale.conversations.histories import Histories
from maestrale.conversations.prepared import Prepared
from maestrale.conversations.reads import ConversationReads
from maestrale.conversations.repository import ConversationRepository, TurnRow
from maestrale.conversations.schemas import (
    ConversationAppend,
    ConversationResponse,
    ConversationRestart,
    ConversationStart,
    UsageOut,
)
from maestrale.conversations.server_tools import ToolboxFactory
from maestrale.conversations.tables import Conversation
from maestrale.conversations.turn import TurnPrefix
from maestrale.conversations.turns import (
    ConversationChanged,
    Turn,
    Turns,
)
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound
from maestrale.core.ids import new_id
from maestrale.core.uow import UnitOfWork
from maestrale.engines.registry import EngineRegistry
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.guardrails.check import apply_guardrails
from maestrale.guardrails.schemas import stored


class EntryNotFound(NotFound):
    code = "entry_not_found"


def new_conversation_id() -> str:
    return "conv_" + new_id().replace("-", "")


def guardrail_key(config: dict[str, Any]) -> str:
    return orjson.dumps(config, option=orjson.OPT_SORT_KEYS).decode()


class ConversationService(ConversationReads):
    def __init__(
        self,
        work: UnitOfWork,
        tenant: Tenant,
        engines: EngineRegistry,
        gateway: Gateway,
        caller: Caller,
        histories: Histories,
        turns: Turns,
        *,
        source: str = "api",
        extra: Mapping[str, Any] | None = None,
        correlation_id: str | None = None,
        toolboxes: ToolboxFactory | None = None,
    ) -> None:
        self.work = work
        self.tenant = tenant
        self.engines = engines
        self.repo = ConversationRepository(work.session, tenant)
        self.agents = AgentService(work.session, tenant, engines)
        self.gateway = gateway
        self.caller = caller
        self.histories = histories
        self.turns = turns
        # Where the model calls come from, for accounting (a batch line: "batch", with its ids
        # among the events' extra fields).
        self.source = source
        self.extra = extra
        # The correlation id of the model calls when not the conversation's own (a workflow
        # execution's, for the calls of a workflow's activities).
        self.correlation_id = correlation_id
        # Builds the toolboxes of the tools the server runs (None: it runs none).
        self.toolboxes = toolboxes

    def in_work(self, work: UnitOfWork) -> ConversationService:
        """The same caller's service in another unit of work (a stream outlives its request)."""
        return ConversationService(
            work,
            self.tenant,
            self.engines,
            self.gateway,
            self.caller,
            self.histories,
            self.turns,
            source=self.source,
            extra=self.extra,
            correlation_id=self.correlation_id,
            toolboxes=self.toolboxes,
        )

    def _correlation(self, prepared: Prepared) -> str:
        return self.correlation_id or prepared.conversation_id

    # Targets.

    async def agent_target(self, agent_id: str, version: str | int | None) -> runtime.Target:
        agent, row = await self.agents.agent_version(agent_id, version)
        return runtime.Target(
            model=row.model,
            instructions=row.instructions,
            tools=list(row.tools or []),
            completion_args=dict(row.completion_args or {}),
            agent_id=agent.id,
            agent_name=row.name,
            agent_version=row.version,
            handoffs=list(row.handoffs or []),
            guardrails=list(row.guardrails or []),
        )

    async def target_of(self, row: Conversation) -> runtime.Target:
        if row.agent_id is not None:
            target = await self.agent_target(row.agent_id, row.agent_version)
            return target.with_guardrails(row.guardrails)
        assert row.model is not None
        return runtime.Target(
            model=row.model,
            instructions=row.instructions,
            tools=list(row.tools or []),
            completion_args=dict(row.completion_args or {}),
            guardrails=list(row.guardrails or []),
        )

    async def _equip(self, target: runtime.Target) -> None:
        """Check the target's tools (400 `tool_unavailable` for a type this server cannot run)
        and build the toolbox of those the server runs, reading what they name with the
        request's session (before it is released: their calls run with none open)."""
        factory = self.toolboxes
        handles = factory.handles if factory is not None else None
        target.check_tools(handles)
        if factory is not None and any(
            t.get("type", "function") != "function" for t in target.tools
        ):
            target.toolbox = await factory.build(self.work.session, self.tenant, target.tools)

    def _stored_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A tool list as stored: the secrets its server-run tools carry sealed."""
        return self.toolboxes.seal(self.tenant, tools) if self.toolboxes else tools

    async def _guard(
        self, prepared: Prepared, target: runtime.Target, added: list[dict[str, Any]]
    ) -> None:
        """Check the entries a request adds against the target's guardrails (403 when one
        blocks), with no transaction open. Each configuration is checked once a request: when
        the request is prepared, and for a server handoff the next agent's new ones."""
        fresh = [g for g in target.guardrails if guardrail_key(g) not in prepared.checked]
        if not fresh:
            return
        await self.work.release()
        results = await apply_guardrails(
            self.gateway,
            self.caller,
            fresh,
            E.to_messages(None, added),
            correlation_id=self._correlation(prepared),
            source=self.source,
        )
        prepared.checked.update(guardrail_key(g) for g in fresh)
        prepared.guarded = [*(prepared.guarded or []), *results]

    async def _ready(self, prepared: Prepared) -> Prepared:
        """Check the request's inputs against its history, its tools (and build their toolbox),
        its answers to the tool calls awaiting confirmation, its first model turn (model,
        completion arguments, messages), then its guardrails; the reads are over (nothing stays
        open while the request waits for its turn or its model)."""
        E.check_results(prepared.history, prepared.added)
        await self._equip(prepared.target)
        prepared.confirmed = confirmations.resolve(
            prepared.history, prepared.confirmations, prepared.target.toolbox
        )
        await self.work.release()
        prefix = await runtime.check_first_turn(
            self.gateway,
            self.caller,
            self._correlation(prepared),
            prepared.target,
            prepared.history + prepared.added,
            override=prepared.override,
            prefix=prepared.prefix,
        )
        if not prepared.confirmed:
            # With confirmations, the calls' entries come between the history and the inputs:
            # the run extends the history's prefix instead.
            prepared.prefix = prefix
        await self._guard(prepared, prepared.target, prepared.added)
        await self.work.release()
        return prepared

    async def _history(
        self, row: Conversation | TurnRow
    ) -> tuple[list[dict[str, Any]], TurnPrefix]:
        """The committed entries of a conversation (its `entry_count` first ones): those this
        process read before (see `histories`), then those added since, read now; and the turn
        messages of its first entries."""
        key = (self.tenant.workspace_id, row.id)
        known, prefix = self.histories.get(key, row.entry_count)
        if len(known) == row.entry_count:
            return list(known), prefix
        history = [*known, *await self.repo.entries(row, from_seq=len(known))]
        self.histories.put(key, tuple(history), prefix)
        return history, prefix

    # Preparing requests.

    async def prepare_start(self, body: ConversationStart) -> Prepared:
        if (body.agent_id is None) == (body.model is None):
            raise BadRequest(
                "give exactly one of `agent_id` and `model`",
                code="invalid_target",
                param="agent_id",
            )
        override = body.completion_args.stored() if body.completion_args else None
        if body.agent_id is not None:
            if body.instructions is not None or body.tools is not None:
                raise BadRequest(
                    "`instructions` and `tools` belong to the agent: update the agent instead",
                    code="invalid_target",
                    param="instructions",
                )
            target = await self.agent_target(body.agent_id, body.agent_version)
            target = target.with_guardrails(stored(body.guardrails))
        else:
            assert body.model is not None
            await self.agents.check_model(body.model)
            target = runtime.Target(
                model=body.model,
                instructions=body.instructions,
                tools=self._stored_tools([t.stored() for t in body.tools or []]),
                completion_args=override or {},
                guardrails=stored(body.guardrails) or [],
            )
            override = None
        conversation_id = new_conversation_id()
        create = None
        if body.store is not False:
            now = utcnow()
            agent = target.agent_id is not None
            create = Conversation(
                id=conversation_id,
                agent_id=target.agent_id,
                agent_version=target.agent_version,
                model=None if agent else target.model,
                instructions=None if agent else target.instructions,
                tools=[] if agent else target.tools,
                completion_args={} if agent else target.completion_args,
                guardrails=stored(body.guardrails),
                name=body.name,
                description=body.description,
                meta=body.metadata,
                created_at=now,
                updated_at=now,
            )
        prepared = Prepared(
            conversation_id,
            target,
            [],
            E.parse_inputs(body.inputs),
            override,
            body.handoff_execution or "server",
            create=create,
        )
        return await self._ready(prepared)

    async def prepare_append(self, conversation_id: str, body: ConversationAppend) -> Prepared:
        """Inputs, and the answers to the tool calls awaiting confirmation (`tool_confirmations`:
        each must be answered when any is pending; then inputs may be empty)."""
        row = await self.get_row(conversation_id)
        history, prefix = await self._history(row)
        answers = list(body.tool_confirmations or [])
        inputs = body.inputs
        prepared = Prepared(
            row.id,
            await self.target_of(row),
            history,
            [] if inputs is None or (answers and inputs == []) else E.parse_inputs(inputs),
            body.completion_args.stored() if body.completion_args else None,
            body.handoff_execution,
            prefix=prefix,
            append=body.store,
            confirmations=answers,
        )
        return await self._ready(prepared)

    async def prepare_restart(self, conversation_id: str, body: ConversationRestart) -> Prepared:
        """A new conversation holding the entries up to `from_entry_id` (included), then the
        inputs, answered by the same model or agent (at `agent_version` if given)."""
        source = await self.get_row(conversation_id)
        entry = await self.repo.entry(source, body.from_entry_id)
        if entry is None:
            raise EntryNotFound(
                f"conversation {source.id!r} has no entry {body.from_entry_id!r}",
                param="from_entry_id",
            )
        target = await self._restart_target(source, body)
        history = [
            {**item, "id": f"{item['id'].split('_', 1)[0]}_{new_id().replace('-', '')}"}
            for item in await self.repo.entries(source, upto_seq=entry.seq)
        ]
        confirmations.refuse_pending(history, body.from_entry_id)
        conversation_id = new_conversation_id()
        create = None
        if body.store:
            now = utcnow()
            create = Conversation(
                id=conversation_id,
                agent_id=source.agent_id,
                agent_version=target.agent_version,
                model=source.model,
                instructions=source.instructions,
                tools=source.tools,
                completion_args=source.completion_args,
                guardrails=(
                    stored(body.guardrails) if body.guardrails is not None else source.guardrails
                ),
                name=source.name,
                description=source.description,
                meta=body.metadata if body.metadata is not None else source.meta,
                created_at=now,
                updated_at=now,
            )
        prepared = Prepared(
            conversation_id,
            target,
            history,
            E.parse_inputs(body.inputs) if body.inputs is not None else [],
            body.completion_args.stored() if body.completion_args else None,
            body.handoff_execution,
            create=create,
        )
        return await self._ready(prepared)

    async def _restart_target(
        self, source: Conversation, body: ConversationRestart
    ) -> runtime.Target:
        """The model or agent a restart runs on, with the guardrails of the new conversation
        (the request's, else the source's) after its agent's."""
        if body.agent_version is not None and source.agent_id is None:
            raise BadRequest(
                "`agent_version` applies to agent conversations only", param="agent_version"
            )
        own = stored(body.guardrails) if body.guardrails is not None else source.guardrails
        if source.agent_id is not None:
            version = body.agent_version if body.agent_version is not None else None
            target = await self.agent_target(source.agent_id, version or source.agent_version)
            return target.with_guardrails(own)
        target = await self.target_of(source)
        target.guardrails = list(own or [])
        return target

    # Running them.

    async def execute(
        self, prepared: Prepared, emit: runtime.Emit | None = None
    ) -> ConversationResponse:
        """Run a prepared request's model turns with no transaction open, then store what it
        adds in one short transaction. An append that stores holds its conversation's turn
        meanwhile (`turns`), so that two appends to one conversation never interleave."""
        if not prepared.append:
            result = await self._run(prepared, prepared.history, prepared.prefix, emit)
            if prepared.create is not None:
                await self.repo.add(prepared.create)
                await self._store(prepared, prepared.create, 0, prepared.history, result)
            return self._response(prepared, result)
        async with self.turns.hold(prepared.conversation_id) as turn:
            history, prefix = prepared.history, prepared.prefix
            if turn.row.entry_count != len(history):  # another append came in between
                history, prefix = await self._history(turn.row)
                E.check_results(history, prepared.added)
                prepared.confirmed = confirmations.resolve(
                    history, prepared.confirmations, prepared.target.toolbox
                )
            result = await self._run(prepared, history, prefix, emit)
            try:
                await self._store(prepared, turn.row, len(history), history, result, turn)
                # Committed here, not by the caller: the same commit gives the turn back.
                await self.work.commit()
            except BaseException:
                # Ended before the turn is given back in another session, which would wait for
                # this transaction's write lock on SQLite (until its busy timeout).
                await self.work.rollback()
                raise
        return self._response(prepared, result)

    async def _run(
        self,
        prepared: Prepared,
        history: list[dict[str, Any]],
        prefix: TurnPrefix,
        emit: runtime.Emit | None,
    ) -> runtime.RunResult:
        await self.work.release()
        if emit is not None:
            await emit(
                {
                    "type": "conversation.response.started",
                    "created_at": E.now_text(),
                    "conversation_id": prepared.conversation_id,
                }
            )

        async def load_agent(agent_id: str) -> runtime.Target:
            """A server handoff's next agent (its current version) with its tools, whose
            guardrails check the request's inputs too before it answers."""
            target = await self.agent_target(agent_id, None)
            await self._equip(target)
            await self._guard(prepared, target, prepared.added)
            await self.work.release()
            return target

        return await runtime.run(
            self.gateway,
            self.caller,
            self._correlation(prepared),
            prepared.target,
            history,
            override=prepared.override,
            handoff_execution=prepared.handoff_execution,
            load_agent=load_agent,
            emit=emit,
            prefix=prefix,
            source=self.source,
            extra=self.extra,
            inputs=prepared.added,
            confirmed=prepared.confirmed,
        )

    async def _store(
        self,
        prepared: Prepared,
        row: Conversation | TurnRow,
        first: int,
        history: list[dict[str, Any]],
        result: runtime.RunResult,
        turn: Turn | None = None,
    ) -> None:
        """Write the entries of `history` from `first` on (a restart's copy), the request's and
        the model's, after the `first` ones of conversation `row` (with `turn`, only while it
        holds), and the confirmation status of the calls it answered; once committed, they are
        this process's copy of the history, with the turn messages the run built (see
        `histories`). A server handoff leaves the conversation on the agent it handed to."""
        conversation_id = row.id
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if row.agent_id is not None and result.target.agent_id != row.agent_id:
            target = result.target
            changes.update(agent_id=target.agent_id, agent_version=target.agent_version)
        new = [*history[first:], *result.entries(prepared.added)]
        owner = turn.owner if turn is not None else None
        if not await self.repo.add_entries(conversation_id, first, new, owner=owner, **changes):
            raise ConversationChanged(
                f"conversation {conversation_id!r} changed while it answered: nothing was "
                "stored; retry",
                param="conversation_id",
            )
        answered = confirmations.answered(history[:first], prepared.confirmed)
        if answered:
            await self.repo.rewrite_entries(conversation_id, list(answered.values()))
            history = [answered.get(position, item) for position, item in enumerate(history)]
        key, entries = (self.tenant.workspace_id, conversation_id), (*history[:first], *new)

        def committed() -> None:
            self.histories.put(key, entries, result.prefix)
            if turn is not None:
                turn.given_back = True

        self.work.on_commit(committed)

    def _response(self, prepared: Prepared, result: runtime.RunResult) -> ConversationResponse:
        return ConversationResponse(
            conversation_id=prepared.conversation_id,
            outputs=result.outputs,
            usage=UsageOut(**result.usage),
            guardrails=prepared.guarded or None,
        )
