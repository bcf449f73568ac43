"""Wire models of the voices group (mistralai 3.x `VoiceCreateRequest`, `VoiceUpdateRequest`,
`VoiceResponse`, `VoiceListResponse`, `VoiceListPage`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from maestrale.voices.presets import PresetVoice
from maestrale.voices.tables import CustomVoice

Gender = Literal["female", "male", "neutral"]
VoiceType = Literal["all", "preset", "custom"]
Short = Annotated[str, Field(max_length=64)]


class VoiceCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=256)
    slug: str | None = Field(default=None, max_length=256)  # 2.x's; derived from the name else
    languages: list[Short] = Field(default_factory=list, max_length=50)
    # Free text for 2.x, one of `Gender` in 3.x's requests: both are taken.
    gender: str | None = Field(default=None, max_length=32)
    age: int | None = Field(default=None, ge=0, le=150)
    tags: list[Short] | None = Field(default=None, max_length=50)
    color: str | None = Field(default=None, max_length=64)
    description: str | None = Field(default=None, max_length=4000)
    retention_notice: int = Field(default=30, ge=0, le=3650)
    sample_audio: str | None = Field(default=None, description="base64-encoded audio file")
    sample_filename: str | None = Field(default=None, max_length=512)


class VoiceUpdate(BaseModel):
    """Only the fields sent change; an explicit null clears a nullable one."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, min_length=1, max_length=256)
    languages: list[Short] | None = Field(default=None, max_length=50)
    gender: str | None = Field(default=None, max_length=32)
    age: int | None = Field(default=None, ge=0, le=150)
    tags: list[Short] | None = Field(default=None, max_length=50)
    description: str | None = Field(default=None, max_length=4000)
    retention_notice: int | None = Field(default=None, ge=0, le=3650)


class VoiceOut(BaseModel):
    id: str
    name: str
    slug: str | None = None
    created_at: datetime
    user_id: str | None
    type: Literal["preset", "custom"]
    languages: list[str] = Field(default_factory=list)
    gender: str | None = None
    age: int | None = None
    tags: list[str] | None = None
    color: str | None = None
    description: str | None = None
    retention_notice: int = 30
    trimmed_seconds: float | None = None
    kind: Literal["ivc", "pvc"] | None = None

    @classmethod
    def of(cls, voice: CustomVoice | PresetVoice) -> VoiceOut:
        if isinstance(voice, PresetVoice):
            return cls(
                id=voice.id,
                name=voice.name,
                slug=voice.id,
                created_at=voice.created_at,
                user_id=None,
                type="preset",
                languages=list(voice.languages),
                gender=voice.gender,
                description=voice.description,
            )
        return cls(
            id=voice.id,
            name=voice.name,
            slug=voice.slug,
            created_at=voice.created_at,
            user_id=voice.user_id,
            type="custom",
            languages=list(voice.languages),
            gender=voice.gender,
            age=voice.age,
            tags=voice.tags,
            color=voice.color,
            description=voice.description,
            retention_notice=voice.retention_notice,
            trimmed_seconds=voice.trimmed_seconds,
            kind="pvc" if voice.kind == "pvc" else "ivc",
        )


class VoiceList(BaseModel):
    items: list[VoiceOut]
    total: int
    page: int
    page_size: int
    total_pages: int


class VoicePage(BaseModel):
    data: list[VoiceOut]
    next_page_token: str | None = Field(
        default=None, description="cursor of the next page, null on the last page"
    )
