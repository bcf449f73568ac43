"""The `authorization` a connector tool of an agent or a conversation may carry (the SDK's
CustomConnector: `{"type": "api-key" | "oauth2-token", "value": ...}`): its value is a bearer
token, so it is sealed before the tool list is stored, and stays sealed in every response
(`sealed:<sealed value>`; a tool list sent back as it was read keeps it as it is). The seal is
bound to the workspace: a sealed value copied into another workspace does not open."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from maestrale.core.crypto import SecretBox, SecretUnreadable
from maestrale.core.errors import BadRequest

PREFIX = "sealed:"
PURPOSE = "connector-tool-authorization"


def _purpose(workspace_id: str) -> str:
    return f"{PURPOSE}:{workspace_id}"


def seal_tools(
    box: SecretBox, workspace_id: str, tools: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """`tools` as they are stored: each connector tool's authorization value sealed."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        auth = tool.get("authorization")
        value = auth.get("value") if isinstance(auth, dict) else None
        if (
            isinstance(auth, dict)
            and tool.get("type") == "connector"
            and isinstance(value, str)
            and value
            and not value.startswith(PREFIX)
        ):
            sealed = box.seal(value.encode(), _purpose(workspace_id))
            tool = {**tool, "authorization": {**auth, "value": PREFIX + sealed}}
        out.append(tool)
    return out


def open_value(box: SecretBox, workspace_id: str, value: str) -> str:
    """The token of an authorization value, sealed or as given."""
    if not value.startswith(PREFIX):
        return value
    try:
        return box.open(value.removeprefix(PREFIX), _purpose(workspace_id)).decode()
    except SecretUnreadable as exc:
        raise BadRequest(
            "a connector tool's sealed authorization cannot be opened here: give the token again",
            code="invalid_tool_authorization",
            param="tools",
        ) from exc
