"""References to prompts and skills, one shape everywhere (agents, conversations, responses):
a prompt `{"id", "version"?, "alias"?, "variables"?}` (`id`: the prompt's id or name; OpenAI's
`{id, version, variables}` is the same shape) and skills `[{"id", "version"?, "alias"?}]`; and
what a run makes of them (`resolve`): the rendered prompt, the skills' bundle, and the record of
which versions ran (the chat completion events' extra fields).

A reference with a `version` pins it; one with an `alias` (or neither: the latest version) is
resolved at each run, so that moving an alias such as `production` changes what runs next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from maestrale.registries.lookup import RegistryLookup, RegistryVersion
from maestrale.registries.render import check_size, render_prompt, render_skills

MAX_VERSION = 2**31 - 1
MAX_SKILLS = 32
MAX_VARIABLES = 256
Name = Annotated[str, Field(min_length=1, max_length=200)]


class _Selector(BaseModel):
    """Which version: a pinned `version`, the one an `alias` points to, or (neither) the latest."""

    model_config = ConfigDict(extra="ignore")

    version: int | None = None
    alias: Annotated[str, Field(min_length=1, max_length=128)] | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        """A version number, or its digits as a string (OpenAI sends `"2"`)."""
        if isinstance(value, str):
            digits = value.strip()
            if not digits.isdigit() or len(digits) > 10:
                raise ValueError("a version is a positive integer")
            return int(digits)
        return value

    @field_validator("version")
    @classmethod
    def _range(cls, value: int | None) -> int | None:
        if value is not None and not 0 < value <= MAX_VERSION:
            raise ValueError(f"a version is an integer from 1 to {MAX_VERSION}")
        return value

    @model_validator(mode="after")
    def _one_selector(self) -> _Selector:
        if self.version is not None and self.alias is not None:
            raise ValueError("give `version` or `alias`, not both")
        return self

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class SkillRef(_Selector):
    """A skill by id (or name)."""

    id: Name


class PromptRef(_Selector):
    """A prompt by id (or name), and the values of its variables. Without `id` it only gives
    values (a conversation's, for its agent's prompt)."""

    id: Name | None = None
    variables: Annotated[dict[str, Any], Field(max_length=MAX_VARIABLES)] | None = None


class RegistryRefs(BaseModel):
    """The `prompt` and `skills` fields of a request (an extension of the SDK's models)."""

    model_config = ConfigDict(extra="ignore")

    prompt: PromptRef | None = None
    skills: Annotated[list[SkillRef], Field(max_length=MAX_SKILLS)] | None = None


def stored_refs(
    prompt: PromptRef | None, skills: Sequence[SkillRef] | None
) -> dict[str, Any] | None:
    """The references as kept with an agent version or a conversation, in its `registry_refs`
    column (None: none)."""
    kept: dict[str, Any] = {}
    if prompt is not None:
        kept["prompt"] = prompt.stored()
    if skills:
        kept["skills"] = [skill.stored() for skill in skills]
    return kept or None


def _record(version: RegistryVersion) -> dict[str, Any]:
    return {"id": version.id, "name": version.name, "version": version.version}


@dataclass(frozen=True, slots=True)
class Resolved:
    """What a run's references made: the rendered prompt, the skills' bundle, and which versions
    they were (`record`, the extra fields of the run's chat completion events)."""

    prompt: str | None
    skills: str | None
    record: dict[str, Any]

    def instructions(self, own: str | None) -> str | None:
        """The effective instructions: the rendered prompt, then `own`, then the skills."""
        parts = [text for text in (self.prompt, own, self.skills) if text]
        if not parts:
            return None
        return check_size("\n\n".join(parts), "the instructions", "prompt")


async def _versions(
    lookup: RegistryLookup, refs: RegistryRefs
) -> tuple[RegistryVersion | None, list[RegistryVersion]]:
    """The prompt and skill versions `refs` names, now (404 for one that is not there)."""
    prompt, found = refs.prompt, None
    if prompt is not None and prompt.id is not None:
        found = await lookup.resolve(
            "prompt", prompt.id, version=prompt.version, alias=prompt.alias
        )
    skills = [
        await lookup.resolve("skill", skill.id, version=skill.version, alias=skill.alias)
        for skill in refs.skills or []
    ]
    return found, skills


async def check_refs(lookup: RegistryLookup, refs: Mapping[str, Any] | None) -> None:
    """Check that what `refs` names exists now (404 otherwise); its variables are checked when
    it runs (a conversation may give them)."""
    await _versions(lookup, RegistryRefs.model_validate(refs or {}))


def prompt_variables(refs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The variables of the prompt reference among stored `refs`."""
    prompt = (refs or {}).get("prompt")
    variables = prompt.get("variables") if isinstance(prompt, dict) else None
    return dict(variables) if isinstance(variables, dict) else None


async def resolve(
    lookup: RegistryLookup,
    refs: Mapping[str, Any] | None,
    variables: Mapping[str, Any] | None = None,
) -> Resolved | None:
    """Resolve stored references (`stored_refs`) now: the prompt's version rendered with its
    own `variables` overridden by `variables`, and the skills' versions bundled. An unknown
    prompt, skill, version or alias is a 404; a missing variable a 400."""
    if not refs:
        return None
    parsed = RegistryRefs.model_validate(refs)
    found, skills = await _versions(lookup, parsed)
    record: dict[str, Any] = {}
    text = None
    if found is not None:
        own = parsed.prompt.variables if parsed.prompt is not None else None
        text = render_prompt(found, {**(own or {}), **(variables or {})})
        record["prompt"] = _record(found)
        # Top-level keys, which the event search filters on (`extra_fields.prompt_version`).
        record["prompt_id"], record["prompt_version"] = found.id, found.version
    if skills:
        record["skills"] = [_record(skill) for skill in skills]
    if not record:
        return None
    return Resolved(text, render_skills(skills) or None, record)


async def effective_instructions(
    lookup: RegistryLookup,
    own: str | None,
    refs: Mapping[str, Any] | None,
    variables: Mapping[str, Any] | None = None,
) -> tuple[str | None, dict[str, Any]]:
    """The instructions a run sends (`Resolved.instructions`, or `own` with no references) and
    the record of the versions it used (empty with none)."""
    resolved = await resolve(lookup, refs, variables)
    if resolved is None:
        return own, {}
    return resolved.instructions(own), resolved.record
