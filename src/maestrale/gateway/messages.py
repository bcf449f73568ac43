"""The wire shape of chat messages as clients send them: the input of every endpoint that takes a
conversation (chat completions, chat moderations and classifications, agents, conversations).
Role-specific rules are checked where the messages are used."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["system", "user", "assistant", "tool"]
Content = str | list[dict[str, Any]]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCallIn(_In):
    name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] | str


class ToolCallIn(_In):
    id: str = "null"
    type: str = "function"
    function: FunctionCallIn
    index: int = 0


class Message(_In):
    """One message, any role; role-specific rules are checked by the endpoint that takes it
    (`completions.validation` for chat). OpenAI's `developer` role is read as `system`."""

    role: Role
    content: Content | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = Field(default=None, max_length=256)
    name: str | None = Field(default=None, max_length=256)
    prefix: bool = False

    @field_validator("role", mode="before")
    @classmethod
    def _developer_is_system(cls, value: object) -> object:
        # OpenAI's newer clients send their instructions as `developer`; OpenAI reads it as
        # `system` for models without a developer role, as every model here is.
        return "system" if value == "developer" else value

    @field_validator("content")
    @classmethod
    def _chunks_have_types(cls, value: Content | None) -> Content | None:
        if isinstance(value, list):
            for i, chunk in enumerate(value):
                if not isinstance(chunk.get("type"), str):
                    raise ValueError(f"content chunk {i} has no `type`")
                if chunk["type"] == "text" and not isinstance(chunk.get("text"), str):
                    raise ValueError(f"text chunk {i} has no `text` string")
        return value
