"""Wire models of the prompts and skills registries (mistralai 3.x `CreatePromptRequest`,
`CreateSkillRequest`, `Create*VersionRequest`, `Update*Request`, `Update*VersionRequest`,
`AliasList`, `Prompt`, `Skill`, `*Version`, `List*Response`, `Create*VersionResponse`).

Requests take the SDK's camelCase aliases and the snake_case names alike and ignore unknown
fields; responses use the aliases and leave out what is unset, as the SDK's serializers do."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_NAME = 128
MAX_ALIASES = 20
MAX_VARIABLES = 100
MAX_ASSETS = 100
MAX_CONTENT_BYTES = 256 * 1024
MAX_ASSETS_BYTES = 8 * 1024 * 1024
MAX_TEXT = 4096  # titles, descriptions, notes
NAME_PATTERN = r"^[A-Za-z0-9_.\-]+$"
IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=NAME_PATTERN)]
Identifier = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=IDENTIFIER_PATTERN)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
Aliases = Annotated[list[Name], Field(max_length=MAX_ALIASES)]
SharingScope = Literal["sharing_scope_unspecified", "private", "workspace"]
ShareRelation = Literal["share_relation_unspecified", "reader", "writer"]
SortField = Literal[
    "list_sort_field_unspecified",
    "list_sort_field_created_at",
    "list_sort_field_last_modified_at",
    "list_sort_field_name",
    "list_sort_field_title",
]
SortDirection = Literal[
    "list_sort_direction_unspecified", "list_sort_direction_asc", "list_sort_direction_desc"
]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def _utf8_size(text: str) -> int:
    # Lone surrogates never reach here (the route refuses them); count them anyway, not raise.
    return len(text.encode("utf-8", "surrogatepass"))


def _check_size(text: str | None, limit: int) -> str | None:
    if text is not None and _utf8_size(text) > limit:
        raise ValueError(f"is longer than {limit} bytes (UTF-8)")
    return text


class PromptVariableIn(_In):
    name: Identifier


class PromptDefinitionIn(_In):
    content: str
    # Omitted: derived from the content's `{{ name }}` placeholders.
    variables: Annotated[list[PromptVariableIn], Field(max_length=MAX_VARIABLES)] | None = None

    @field_validator("content")
    @classmethod
    def _content_size(cls, value: str) -> str:
        _check_size(value, MAX_CONTENT_BYTES)
        return value

    @field_validator("variables")
    @classmethod
    def _unique(cls, value: list[PromptVariableIn] | None) -> list[PromptVariableIn] | None:
        names = [v.name for v in value or ()]
        if len(set(names)) != len(names):
            raise ValueError("variable names must be unique")
        return value


class RawAssetIn(_In):
    raw_content: str = Field(alias="rawContent")
    is_executable: bool | None = Field(default=None, alias="isExecutable")


class TextAssetIn(_In):
    text_content: str = Field(alias="textContent")
    is_executable: bool | None = Field(default=None, alias="isExecutable")


AssetPath = Annotated[str, Field(min_length=1, max_length=512)]


def _check_asset_path(path: str) -> None:
    # A relative path inside the skill's bundle: never absolute, never out of it.
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or "\x00" in path or ".." in parts or "" in parts:
        raise ValueError(f"asset path {path!r} is not a relative path inside the skill")


class SkillDefinitionIn(_In):
    description: Annotated[str, Field(max_length=8192)] | None = None
    body: str | None = None
    assets: dict[AssetPath, RawAssetIn | TextAssetIn] | None = None

    @field_validator("body")
    @classmethod
    def _body_size(cls, value: str | None) -> str | None:
        return _check_size(value, MAX_CONTENT_BYTES)

    @field_validator("assets")
    @classmethod
    def _assets_size(
        cls, value: dict[str, RawAssetIn | TextAssetIn] | None
    ) -> dict[str, RawAssetIn | TextAssetIn] | None:
        if value is None:
            return None
        if len(value) > MAX_ASSETS:
            raise ValueError(f"a skill has at most {MAX_ASSETS} assets")
        for path in value:
            _check_asset_path(path)
        total = sum(
            _utf8_size(a.raw_content if isinstance(a, RawAssetIn) else a.text_content)
            for a in value.values()
        )
        if total > MAX_ASSETS_BYTES:
            raise ValueError(f"the assets total more than {MAX_ASSETS_BYTES} bytes")
        return value


class _CreateBase(_In):
    name: Name
    notes: Text | None = None
    sharing_scope: SharingScope | None = Field(default=None, alias="sharingScope")
    aliases: Aliases | None = None
    workspace_relation: ShareRelation | None = Field(default=None, alias="workspaceRelation")


class PromptCreate(_CreateBase):
    definition: PromptDefinitionIn
    title: Annotated[str, Field(max_length=256)] | None = None
    description: Text | None = None


class SkillCreate(_CreateBase):
    definition: SkillDefinitionIn


class PromptVersionCreate(_In):
    definition: PromptDefinitionIn
    notes: Text | None = None
    aliases: Aliases | None = None


class SkillVersionCreate(_In):
    definition: SkillDefinitionIn
    notes: Text | None = None
    aliases: Aliases | None = None


class SkillUpdate(_In):
    """Only the fields sent change."""

    sharing_scope: SharingScope | None = Field(default=None, alias="sharingScope")
    workspace_relation: ShareRelation | None = Field(default=None, alias="workspaceRelation")


class PromptUpdate(SkillUpdate):
    """Only the fields sent change; an explicit null clears the title or the description."""

    title: Annotated[str, Field(max_length=256)] | None = None
    description: Text | None = None


class AliasList(_In):
    """Absent: the aliases stay; `{"values": []}`: the version loses them all."""

    values: Aliases | None = None


class VersionUpdate(_In):
    """Only the fields sent change; an explicit null clears the notes."""

    notes: Text | None = None
    aliases: AliasList | None = None


# Responses (documentation of `/openapi.json`; the routes send the projected documents).


class _Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PromptVariableOut(_Out):
    name: str | None = None


class PromptDefinitionOut(_Out):
    content: str | None = None
    variables: list[PromptVariableOut] | None = None


class SkillAssetOut(_Out):
    raw_content: str | None = Field(default=None, alias="rawContent")
    text_content: str | None = Field(default=None, alias="textContent")
    is_executable: bool | None = Field(default=None, alias="isExecutable")


class SkillDefinitionOut(_Out):
    description: str | None = None
    body: str | None = None
    assets: dict[str, SkillAssetOut] | None = None


class _ObjectOut(_Out):
    id: str | None = None
    name: str | None = None
    version: int | None = None
    notes: str | None = None
    aliases: list[str] | None = None
    sharing_scope: str | None = Field(default=None, alias="sharingScope")
    # Not in the SDK's model (which ignores it): what PATCH set.
    workspace_relation: str | None = Field(default=None, alias="workspaceRelation")
    created_at: datetime | None = Field(default=None, alias="createdAt")
    updated_at: datetime | None = Field(default=None, alias="updatedAt")
    latest_version: int | None = Field(default=None, alias="latestVersion")
    created_by: str | None = Field(default=None, alias="createdBy")
    version_created_at: datetime | None = Field(default=None, alias="versionCreatedAt")


class PromptOut(_ObjectOut):
    definition: PromptDefinitionOut | None = None
    title: str | None = None
    description: str | None = None


class SkillOut(_ObjectOut):
    definition: SkillDefinitionOut | None = None


class PromptVersionOut(_Out):
    version: int | None = None
    definition: PromptDefinitionOut | None = None
    notes: str | None = None
    aliases: list[str] | None = None
    created_at: datetime | None = Field(default=None, alias="createdAt")


class SkillVersionOut(_Out):
    version: int | None = None
    definition: SkillDefinitionOut | None = None
    notes: str | None = None
    aliases: list[str] | None = None
    created_at: datetime | None = Field(default=None, alias="createdAt")


class PromptList(_Out):
    data: list[PromptOut] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, alias="nextPageToken")


class SkillList(_Out):
    data: list[SkillOut] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, alias="nextPageToken")


class PromptVersionList(_Out):
    data: list[PromptVersionOut] = Field(default_factory=list)


class SkillVersionList(_Out):
    data: list[SkillVersionOut] = Field(default_factory=list)


class VersionCreated(_Out):
    version: int
    deduplicated: bool


class Deleted(_Out):
    """`DeletePromptResponse` / `DeleteSkillResponse`: an empty object."""


def definition_doc(definition: PromptDefinitionIn | SkillDefinitionIn) -> dict[str, Any]:
    """The definition as stored and served: the SDK's wire shape, unset fields left out."""
    return definition.model_dump(by_alias=True, exclude_none=True)
