"""Business rules of responses. A response request is a conversation request: its `input` is the
entries it adds, its model (or agent), instructions and tools are the target that answers them,
and it runs on the conversation runtime (`ConversationService`: guardrails, limits, accounting,
events, the tools the server runs, no transaction open while a model or tool runs). A stored
response is a turn of a conversation (`tables`); `previous_response_id` continues that
conversation from the end of that turn. A background response is stored queued and run by a job
(`tasks`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maestrale.conversations.loop.run import Emit, TurnsResult
from maestrale.conversations.prepared import Prepared
from maestrale.conversations.repository import ConversationRepository, TurnRow
from maestrale.conversations.schemas import ConversationStart
from maestrale.conversations.service import ConversationService
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import BadRequest, Conflict, NotFound
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.uow import UnitOfWork
from maestrale.core.validation import parse_body
from maestrale.responses import shapes
from maestrale.responses.files import InputFiles, read_input_files
from maestrale.responses.items import input_entries, input_item, output_items
from maestrale.responses.repository import ResponseRepository
from maestrale.responses.schemas import ResponseCreate, ResponseInputs
from maestrale.responses.tables import StoredResponse
from maestrale.responses.tools import completion_args, conversation_tools

# What `include` may ask for (OpenAI's values) but the log-probabilities (refused, as
# `top_logprobs` is): each adds the data of an item type this server's responses do not hold
# (tool call items, reasoning), so nothing.
INCLUDES = frozenset(
    {
        "code_interpreter_call.outputs",
        "computer_call_output.output.image_url",
        "file_search_call.results",
        "message.input_image.image_url",
        "reasoning.encrypted_content",
        "web_search_call.action.sources",
        "web_search_call.results",
    }
)
RUNNING = ("queued", "in_progress")
BACKGROUND = "responses.background"  # the job kind of background responses


class ResponseNotFound(NotFound):
    code = "response_not_found"


class UnsupportedParameter(BadRequest):
    code = "unsupported_parameter"


@dataclass(slots=True)
class Planned:
    """A response request checked and ready to run (`prepared`), and its response as it starts."""

    body: ResponseCreate
    response: dict[str, Any]
    prepared: Prepared

    @property
    def store(self) -> bool:
        return self.body.store is not False


def _check(body: ResponseInputs) -> None:
    """The rules between fields, before anything is read."""
    if (body.agent_id is None) == (body.model is None):
        raise BadRequest(
            "give exactly one of `model` and `agent_id`", code="invalid_target", param="model"
        )
    if body.previous_response_id is not None and body.conversation is not None:
        raise BadRequest(
            "give `previous_response_id` or `conversation`, not both",
            param="previous_response_id",
        )
    if body.truncation == "auto":
        raise UnsupportedParameter(
            "truncation 'auto' is not served: a request past the model's context is refused "
            "with a 400 (truncation 'disabled')",
            param="truncation",
        )
    if isinstance(body, ResponseCreate):
        if body.background and body.store is False:
            raise BadRequest("a background response must be stored (`store` true)", param="store")
        if body.top_logprobs or "message.output_text.logprobs" in (body.include or ()):
            raise UnsupportedParameter(
                "log-probabilities are not served on responses (use /v1/chat/completions)",
                param="top_logprobs" if body.top_logprobs else "include",
            )
        unknown = sorted(set(body.include or ()) - INCLUDES)
        if unknown:
            raise BadRequest(
                f"include: unknown value {unknown[0]!r}", code="invalid_include", param="include"
            )


def _conversation_id(value: str | dict[str, Any] | None) -> str | None:
    if isinstance(value, dict):
        value = value.get("id")
    if value is None or (isinstance(value, str) and 0 < len(value) <= 200):
        return value
    raise BadRequest("`conversation` must be a conversation id", param="conversation")


def _prompt(body: ResponseInputs) -> dict[str, Any] | None:
    """The request's prompt reference, its OpenAI-style variables (an `input_text` item)
    read as their text."""
    if body.prompt is None:
        return None
    prompt = body.prompt.stored()
    variables = prompt.get("variables")
    if variables:
        prompt["variables"] = {
            name: value["text"]
            if isinstance(value, dict)
            and value.get("type") == "input_text"
            and isinstance(value.get("text"), str)
            else value
            for name, value in variables.items()
        }
    return prompt


def _position(items: list[dict[str, Any]], item_id: str, param: str) -> int:
    """Where the item a page cursor names is (400 for one that is not there)."""
    for position, item in enumerate(items):
        if item["id"] == item_id:
            return position
    raise BadRequest(f"no input item {item_id!r} in this response", param=param)


class ResponsesService:
    """The responses of one caller in one unit of work."""

    def __init__(
        self,
        work: UnitOfWork,
        tenant: Tenant,
        conversations: ConversationService,
        queue: JobQueue | None = None,
        files: InputFiles | None = None,
    ) -> None:
        self.work = work
        self.tenant = tenant
        self.conversations = conversations
        self.repo = ResponseRepository(work.session, tenant)
        self.queue = queue  # runs background responses
        self.files = files  # reads the file and image parts of inputs

    def in_work(self, work: UnitOfWork) -> ResponsesService:
        """The same caller's service in another unit of work (a stream outlives its request)."""
        return ResponsesService(
            work, self.tenant, self.conversations.in_work(work), self.queue, self.files
        )

    # Reads.

    async def row(self, response_id: str) -> StoredResponse:
        row = await self.repo.fresh(response_id)
        if row is None:
            raise ResponseNotFound(f"response {response_id!r} not found", param="response_id")
        return row

    async def get(self, response_id: str) -> dict[str, Any]:
        return dict((await self.row(response_id)).body)

    async def input_items(
        self, response_id: str, *, after: str | None, before: str | None, limit: int, order: str
    ) -> dict[str, Any]:
        """The items the response's request added, as a list page (newest first with `order`
        "desc", OpenAI's default), after or before an item id."""
        row = await self.row(response_id)
        entries: list[dict[str, Any]] = []
        if row.conversation_id is not None and row.input_count:
            conversations = ConversationRepository(self.work.session, self.tenant)
            entries = await conversations.entries(
                TurnRow(row.conversation_id, 0, None),
                from_seq=row.first_seq,
                upto_seq=row.first_seq + row.input_count - 1,
            )
        items = [item for e in entries if (item := input_item(e)) is not None]
        if order == "desc":
            items.reverse()
        if after is not None:
            items = items[_position(items, after, "after") + 1 :]
        if before is not None:
            items = items[: _position(items, before, "before")]
        page = items[:limit]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(items) > limit,
        }

    async def delete(self, response_id: str) -> dict[str, Any]:
        """Delete a response; the conversation it started goes with it unless other responses
        continue it (their context holds its turn). A conversation it did not start (one named
        by `conversation`, or the chain of an earlier response) stays."""
        row = await self.row(response_id)
        if row.status in RUNNING:
            raise Conflict(
                f"response {response_id!r} is {row.status}: cancel it first", param="response_id"
            )
        conversation_id = row.conversation_id
        await self.repo.delete(row)
        if (
            conversation_id is not None
            and row.started
            and not await self.repo.others_of(conversation_id, response_id)
        ):
            await self.conversations.delete(conversation_id)
        return {"id": response_id, "object": "response.deleted", "deleted": True}

    # Preparing requests.

    def _start(self, body: ResponseInputs, store: bool) -> ConversationStart:
        start: ConversationStart = parse_body(
            ConversationStart,
            {
                "inputs": [],
                "model": body.model,
                "agent_id": body.agent_id,
                "agent_version": body.agent_version,
                "instructions": body.instructions,
                "prompt": _prompt(body),
                "skills": [s.stored() for s in body.skills] if body.skills is not None else None,
                "tools": conversation_tools(body.tools) if body.tools else None,
                "store": store,
                "metadata": getattr(body, "metadata", None),
            },
        )
        return start

    async def prepare(self, body: ResponseInputs, store: bool, *, ready: bool = True) -> Prepared:
        """The conversation request of a response request: on a new conversation, or after the
        previous response's turn (404 for one this workspace does not have), or at the end of a
        conversation named by `conversation`."""
        _check(body)
        start = self._start(body, store)
        added = input_entries(body.input, body.model or "")
        added = await read_input_files(
            added, self.work, self.tenant, self.conversations.caller.key_id, self.files
        )
        args = completion_args(body)
        conversation = _conversation_id(body.conversation)
        service = self.conversations
        if body.previous_response_id is not None:
            previous = await self.repo.get(body.previous_response_id)
            if previous is None or previous.conversation_id is None:
                raise ResponseNotFound(
                    f"previous response {body.previous_response_id!r} not found",
                    param="previous_response_id",
                )
            if previous.status in RUNNING or previous.status in ("failed", "cancelled"):
                raise BadRequest(
                    f"previous response {previous.id!r} is {previous.status}: only a "
                    "completed or incomplete response can be continued",
                    param="previous_response_id",
                )
            return await service.prepare_follow(
                previous.conversation_id, previous.end_seq, start, added, args, ready=ready
            )
        if conversation is not None:
            row = await service.get_row(conversation)
            return await service.prepare_follow(
                row.id, row.entry_count, start, added, args, ready=ready
            )
        return await service.prepare_start(start, added, args, ready=ready)

    async def plan(self, body: ResponseCreate, response_id: str | None = None) -> Planned:
        """Check a request and prepare its run (every 4xx it can get comes from here)."""
        prepared = await self.prepare(body, body.store is not False)
        prepared.max_tool_calls = body.max_tool_calls
        response = shapes.initial(
            response_id or shapes.new_response_id(),
            body,
            prepared.target.model,
            "in_progress",
        )
        return Planned(body, response, prepared)

    # Running them.

    async def run(self, planned: Planned, emit: Emit | None = None) -> dict[str, Any]:
        """Run a planned response on the conversation runtime; store it (when asked) in the
        short transaction that stores its conversation's entries."""
        prepared = planned.prepared

        done: dict[str, Any] = {}

        def finished(result: TurnsResult) -> dict[str, Any]:
            if not done:  # once: stored and answered alike
                output = output_items(result.outputs)
                usage, reason = result.usage, prepared.finish_reason
                done.update(shapes.finished(planned.response, output, usage, reason))
            return done

        async def store(result: TurnsResult) -> None:
            first = prepared.first_seq or 0
            await self.keep(
                finished(result),
                new=not planned.body.background,
                conversation_id=prepared.conversation_id,
                started=prepared.create is not None,
                first_seq=first,
                input_count=len(prepared.added),
                end_seq=first + len(prepared.added) + len(result.outputs) - result.lead,
            )

        if planned.store:
            prepared.on_store = store
        return finished(await self.conversations.complete(prepared, emit))

    async def keep(self, response: dict[str, Any], *, new: bool, **columns: Any) -> None:
        """Store a response: its row created, or a background one's brought up to date."""
        values = {"status": response["status"], "body": response, **columns}
        if not new:
            await self.repo.update(response["id"], **values)
            return
        previous = response.get("previous_response_id")
        await self.repo.insert(id=response["id"], previous_response_id=previous, **values)

    async def enqueue(self, body: ResponseCreate) -> dict[str, Any]:
        """A background response: checked as it would run now, stored queued with its request;
        a job runs it (`tasks`)."""
        if self.queue is None:
            raise UnsupportedParameter("background responses are not run here", param="background")
        planned = await self.plan(body)
        response = {**planned.response, "status": "queued"}
        caller = self.conversations.caller
        job = await self.queue.enqueue(
            self.work.session,
            BACKGROUND,
            {
                "response_id": response["id"],
                "key_id": caller.key_id,
                "user_id": caller.user_id,
                "service_account_id": caller.service_account_id,
            },
            tenant=self.tenant,
            max_attempts=3,
        )
        await self.repo.insert(
            id=response["id"],
            status="queued",
            started=False,
            previous_response_id=body.previous_response_id,
            body=response,
            request=self._kept_request(body),
            job_id=job.id,
        )
        return response

    def _kept_request(self, body: ResponseCreate) -> dict[str, Any]:
        """The request a background response runs, as kept: its tools' secrets sealed (the
        toolboxes open them again when the job builds its tools)."""
        request = body.model_dump(mode="json", exclude_none=True)
        toolboxes = self.conversations.toolboxes
        if request.get("tools") and toolboxes is not None:
            request["tools"] = toolboxes.seal(self.tenant, request["tools"])
        return request

    async def cancel(self, response_id: str) -> dict[str, Any]:
        """Cancel a background response that is queued or running (its job stops at its next
        step, nothing of it is stored); one that ended is returned as it is."""
        row = await self.row(response_id)
        if not row.body.get("background"):
            raise BadRequest("only a background response can be cancelled", param="response_id")
        if row.status not in RUNNING:
            return dict(row.body)
        body = {**row.body, "status": "cancelled", "completed_at": None}
        if await self.repo.update(response_id, only_if=RUNNING, status="cancelled", body=body):
            return body
        return dict((await self.row(response_id)).body)
