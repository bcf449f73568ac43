"""Wire models of moderation and classification (the SDK's ClassificationRequest,
ChatModerationRequest, ChatClassificationRequest, ModerationResponse, ClassificationResponse).
Unknown fields are accepted and ignored."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from maestrale.gateway.messages import Message


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TextsRequest(_In):
    """`/v1/moderations` and `/v1/classifications`: one text or a list of texts."""

    model: str = Field(min_length=1, max_length=256)
    input: str | list[str]
    metadata: dict[str, Any] | None = None

    def inputs(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else self.input


class ChatModerationRequest(_In):
    """`/v1/chat/moderations`: one conversation (a list of messages) or a list of them."""

    model: str = Field(min_length=1, max_length=256)
    input: list[Message] | list[list[Message]]

    def conversations(self) -> list[list[Message]]:
        if not self.input:
            return []
        if isinstance(self.input[0], list):
            return [item for item in self.input if isinstance(item, list)]
        return [[item for item in self.input if isinstance(item, Message)]]


class InstructRequest(_In):
    messages: list[Message]


class ChatClassificationRequest(_In):
    """`/v1/chat/classifications`: one `{messages}` object or a list of them."""

    model: str = Field(min_length=1, max_length=256)
    input: InstructRequest | list[InstructRequest]

    def conversations(self) -> list[list[Message]]:
        items = [self.input] if isinstance(self.input, InstructRequest) else self.input
        return [item.messages for item in items]


# Response models: for the OpenAPI document (the routes write dicts).


class ModerationObject(BaseModel):
    categories: dict[str, bool]
    category_scores: dict[str, float]


class ModerationResponse(BaseModel):
    id: str
    model: str
    results: list[ModerationObject]


class ClassificationTargetResult(BaseModel):
    scores: dict[str, float]


class ClassificationResponse(BaseModel):
    id: str
    model: str
    results: list[dict[str, ClassificationTargetResult]]
