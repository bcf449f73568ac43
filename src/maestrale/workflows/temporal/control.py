"""The Temporal calls that act on a running execution: cancel, terminate, reset, signal, query,
update, its history, and a run's own state.

Arguments of signals, queries and updates go as one `json/plain` payload (the official worker
unwraps it like the platform's `json/wf_v1`); query and update answers come back as Temporal
payloads and are decoded as results are (`payloads.decode`). Temporal's errors become the
group's: a closed execution is a 409 `WF_1102`, a handler the workflow does not have or that
refuses its input a 400, no worker answering in time a 504 `WF_1103`.

`temporalio` (the `[workflows]` extra) is imported where it is used, as in `engine`: the server
imports this module and runs without it.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from datetime import timedelta
from typing import Any

from maestrale.workflows.errors import WorkflowError, engine_failed
from maestrale.workflows.temporal.engine import (
    TemporalEngine,
    translated,
)

INVALID = "WF_1000"


def _timed_out(what: str, execution_id: str, timeout: float) -> WorkflowError:
    return engine_failed(
        f"no worker answered the {what} of execution {execution_id} within {timeout:g} s",
        status_code=504,
    )


def _is_timeout(exc: Exception) -> bool:
    from temporalio.service import RPCError, RPCStatusCode

    # The client's own deadline (`rpc_timeout`) surfaces as CANCELLED "Timeout expired".
    return isinstance(exc, RPCError) and exc.status in (
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,
    )


def _cause_message(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None) or exc.__cause__
    message = str(cause) if cause is not None else ""
    return message or str(exc) or type(exc).__name__


class TemporalControl:
    """Actions on executions, through a process's `TemporalEngine` (and its one client)."""

    def __init__(self, engine: TemporalEngine) -> None:
        self.engine = engine

    async def cancel(self, execution_id: str) -> None:
        """Ask the latest run to cancel (the workflow decides how it ends; usually CANCELED)."""
        handle = await self.engine.handle(execution_id)
        try:
            await handle.cancel()
        except Exception as exc:
            raise translated(exc, execution_id) from exc

    async def terminate(self, execution_id: str, reason: str | None) -> None:
        """End the latest run at once, without running any of its code (TERMINATED)."""
        handle = await self.engine.handle(execution_id)
        try:
            await handle.terminate(reason=reason)
        except Exception as exc:
            raise translated(exc, execution_id) from exc

    async def reset(
        self,
        execution_id: str,
        event_id: int,
        *,
        reason: str | None,
        exclude_signals: bool,
        exclude_updates: bool,
    ) -> str:
        """Reset the latest run to the workflow task that ended at `event_id`: a new run of the
        same execution replays up to there and goes on; its run id."""
        from temporalio.api.common.v1 import WorkflowExecution
        from temporalio.api.enums.v1 import ResetReapplyExcludeType
        from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest

        excluded = []
        if exclude_signals:
            excluded.append(ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL)
        if exclude_updates:
            excluded.append(ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE)
        client = await self.engine.client()
        request = ResetWorkflowExecutionRequest(
            namespace=self.engine.namespace,
            workflow_execution=WorkflowExecution(workflow_id=execution_id),
            reason=reason or "reset through the workflows API",
            workflow_task_finish_event_id=event_id,
            # One id per call: Temporal deduplicates retries of the same request.
            request_id=str(uuid.uuid4()),
            reset_reapply_exclude_types=excluded,
            identity="maestrale",
        )
        try:
            response = await client.workflow_service.reset_workflow_execution(request)
        except Exception as exc:
            raise translated(exc, execution_id) from exc
        return str(response.run_id)

    async def signal(self, execution_id: str, name: str, input_: Any) -> None:
        from temporalio.common import RawValue

        from maestrale.workflows.temporal.payloads import argument_payload

        handle = await self.engine.handle(execution_id)
        try:
            await handle.signal(name, RawValue(argument_payload(input_)))
        except Exception as exc:
            raise translated(exc, execution_id) from exc

    async def query(self, execution_id: str, name: str, input_: Any, timeout: float) -> Any:
        """A query's answer, decoded; it needs a worker of the execution's deployment."""
        from temporalio.client import WorkflowQueryFailedError, WorkflowQueryRejectedError
        from temporalio.common import RawValue

        from maestrale.workflows.temporal.payloads import argument_payload, decode

        handle = await self.engine.handle(execution_id)
        try:
            raw = await handle.query(
                name,
                RawValue(argument_payload(input_)),
                result_type=RawValue,
                rpc_timeout=timedelta(seconds=timeout),
            )
        except (WorkflowQueryFailedError, WorkflowQueryRejectedError) as exc:
            # An unknown query name, a handler that raised, or a rejected condition: the
            # caller's doing, not the engine's.
            raise WorkflowError(
                f"query {name!r} failed: {_cause_message(exc)}", INVALID, status_code=400
            ) from exc
        except Exception as exc:
            if _is_timeout(exc):
                raise _timed_out(f"query {name!r}", execution_id, timeout) from exc
            raise translated(exc, execution_id) from exc
        return decode(raw.payload)

    async def update(self, execution_id: str, name: str, input_: Any, timeout: float) -> Any:
        """An update's result, decoded, once the workflow has run its handler."""
        from temporalio.client import (
            WorkflowUpdateFailedError,
            WorkflowUpdateRPCTimeoutOrCancelledError,
        )
        from temporalio.common import RawValue

        from maestrale.workflows.temporal.payloads import argument_payload, decode

        handle = await self.engine.handle(execution_id)
        try:
            raw = await handle.execute_update(
                name,
                RawValue(argument_payload(input_)),
                result_type=RawValue,
                rpc_timeout=timedelta(seconds=timeout),
            )
        except WorkflowUpdateFailedError as exc:
            # The worker refused it: no such handler, a validator that said no, or a handler
            # that raised.
            raise WorkflowError(
                f"update {name!r} failed: {_cause_message(exc)}", INVALID, status_code=400
            ) from exc
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            raise _timed_out(f"update {name!r}", execution_id, timeout) from exc
        except Exception as exc:
            if _is_timeout(exc):
                raise _timed_out(f"update {name!r}", execution_id, timeout) from exc
            raise translated(exc, execution_id) from exc
        return decode(raw.payload)

    async def history(
        self, execution_id: str, run_id: str | None = None, *, decode_payloads: bool = True
    ) -> dict[str, Any]:
        """The run's event history as Temporal's JSON (`{"events": [...]}`); with
        `decode_payloads`, each payload in it is replaced by its decoded value."""
        handle = await self.engine.handle(execution_id, run_id)
        try:
            history = await handle.fetch_history()
        except Exception as exc:
            raise translated(exc, execution_id) from exc
        document: dict[str, Any] = history.to_json_dict()
        if decode_payloads:
            decoded: dict[str, Any] = _decoded(document)
            return decoded
        return document

    async def execution_of_run(self, run_id: str) -> str | None:
        """The execution (workflow id) a run belongs to, from Temporal's visibility; `run_id`
        must be a UUID (it is quoted into a visibility query)."""
        uuid.UUID(run_id)  # a ValueError for anything else: never reaches the query
        client = await self.engine.client()
        try:
            async for found in client.list_workflows(f'RunId = "{run_id}"', limit=1):
                return str(found.id)
        except Exception as exc:
            raise translated(exc, run_id) from exc
        return None


def _decoded(node: Any) -> Any:
    """`node` (history JSON) with every payload (`{"metadata": {"encoding": …}, "data": …}`)
    replaced by its decoded value; nothing inside a decoded payload is looked at again."""
    from temporalio.api.common.v1 import Payload

    from maestrale.workflows.temporal.payloads import decode

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            payload = _as_payload(node, Payload)
            if payload is not None:
                return decode(payload)
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(node)


def _as_payload(node: dict[str, Any], payload_type: Any) -> Any:
    metadata = node.get("metadata")
    if not isinstance(metadata, dict) or "encoding" not in metadata:
        return None
    if set(node) - {"metadata", "data", "externalPayloads"}:
        return None
    try:
        return payload_type(
            metadata={
                str(k): base64.b64decode(v) for k, v in metadata.items() if isinstance(v, str)
            },
            data=base64.b64decode(node.get("data") or ""),
        )
    except (binascii.Error, ValueError):
        return None
