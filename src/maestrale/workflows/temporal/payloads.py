"""The payloads the platform and the official worker exchange through Temporal.

Start arguments go as `json/wf_v1`: the data is the raw JSON of the execute request's `input`,
the metadata carries the execution's context (namespace, execution id, the execution token whose
sha256 the worker sends back in `executions/register`, the request's `extensions`). Results,
query and update answers come back as `json/wf_v1` (or `json/plain` from plain Temporal
workers); their data is JSON unless `encoding_options` says it is compressed, encrypted or
offloaded, in which case it is handed on encoded, as the platform's `NetworkEncodedResult`.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # temporalio comes with the [workflows] extra: imported where it is used
    from temporalio.api.common.v1 import Payload

WF_V1 = b"json/wf_v1"
JSON_PLAIN = b"json/plain"
NULL = b"binary/null"


def start_payload(
    input_: Any,
    *,
    namespace: str,
    execution_id: str,
    token: str,
    extensions: dict[str, Any] | None,
    root_execution_id: str | None = None,
) -> Payload:
    from temporalio.api.common.v1 import Payload

    metadata = {
        "encoding": WF_V1,
        "namespace": namespace.encode(),
        "execution_id": execution_id.encode(),
        "encoding_options": b"",
        "__internal_execution_token": token.encode(),
        "__internal_on_behalf_of": b"false",
    }
    if extensions:
        metadata["__internal_extensions"] = json.dumps(extensions).encode()
    if root_execution_id and root_execution_id != execution_id:
        metadata["root_workflow_exec_id"] = root_execution_id.encode()
    if input_ is None:
        metadata["empty_payload"] = b"true"
        return Payload(metadata=metadata, data=b"null")
    return Payload(metadata=metadata, data=json.dumps(input_).encode())


def argument_payload(input_: Any) -> Payload:
    """A signal's, query's or update's argument: plain JSON, which the worker unwraps."""
    from temporalio.api.common.v1 import Payload

    return Payload(metadata={"encoding": JSON_PLAIN}, data=json.dumps(input_).encode())


def decode(payload: Payload | None) -> Any:
    """A result payload as JSON, or `{"b64payload", "encoding_options"}` when it is encoded."""
    if payload is None:
        return None
    encoding = payload.metadata.get("encoding", b"")
    if encoding == NULL or not payload.data:
        return None
    options = payload.metadata.get("encoding_options", b"").decode(errors="replace")
    if encoding in (WF_V1, JSON_PLAIN) and not options:
        try:
            return json.loads(payload.data)
        except ValueError:
            pass
    return {
        "b64payload": base64.b64encode(payload.data).decode(),
        "encoding_options": [o for o in options.split(",") if o],
    }


def decode_all(payloads: Any) -> Any:
    """The first of a `Payloads` message (Temporal results are one payload), decoded."""
    items = list(getattr(payloads, "payloads", None) or [])
    return decode(items[0]) if items else None
