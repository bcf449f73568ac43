"""What the registries answer: an object at one of its versions (`Prompt`, `Skill`), a version
(`PromptVersion`, `SkillVersion`), and the `fields` projection of either."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from maestrale.core.clock import as_utc
from maestrale.registries.errors import InvalidQuery
from maestrale.registries.schemas import (
    PromptOut,
    PromptVersionOut,
    SkillOut,
    SkillVersionOut,
)
from maestrale.registries.tables import RegistryObject, RegistryVersion

# The one definition path a skills list shows (body and assets are read one skill at a time).
LISTED_SKILL_PATHS = frozenset({"definition.description"})


@dataclass(frozen=True, slots=True)
class Resolved:
    """An object at one of its versions, with the aliases that point at that version."""

    object: RegistryObject
    version: RegistryVersion
    aliases: Sequence[str]


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def object_doc(kind: str, item: Resolved) -> dict[str, Any]:
    obj, ver = item.object, item.version
    common: dict[str, Any] = {
        "id": obj.id,
        "name": obj.name,
        "definition": ver.definition,
        "version": ver.version,
        "notes": ver.notes,
        "aliases": sorted(item.aliases),
        "sharing_scope": obj.sharing_scope,
        "workspace_relation": obj.workspace_relation,
        "created_at": as_utc(obj.created_at),
        "updated_at": as_utc(obj.updated_at),
        "latest_version": obj.latest_version,
    }
    if kind == "skill":
        return _dump(SkillOut.model_validate(common))
    return _dump(
        PromptOut.model_validate(
            {
                **common,
                "title": obj.title,
                "description": obj.description,
                "created_by": obj.created_by,
                "version_created_at": as_utc(ver.created_at),
            }
        )
    )


def version_doc(kind: str, row: RegistryVersion, aliases: Sequence[str]) -> dict[str, Any]:
    model = SkillVersionOut if kind == "skill" else PromptVersionOut
    doc = {
        "version": row.version,
        "definition": row.definition,
        "notes": row.notes,
        "aliases": sorted(aliases),
        "created_at": as_utc(row.created_at),
    }
    return _dump(model.model_validate(doc))


def _wire_names(model: type[BaseModel]) -> dict[str, str]:
    """Both spellings of each field (`created_at`, `createdAt`) to the one the wire uses."""
    names: dict[str, str] = {}
    for name, info in model.model_fields.items():
        wire = info.alias or name
        names[name] = names[wire] = wire
    return names


_NAMES = {"prompt": _wire_names(PromptOut), "skill": _wire_names(SkillOut)}


def parse_fields(
    kind: str, fields: Sequence[str] | None, *, listing: bool = False
) -> list[tuple[str, ...]] | None:
    """The field paths of a `fields` projection (repeated or comma-separated), top names in
    their wire spelling; 400 naming a path that does not exist (or, in a skills list, a
    definition path other than `definition.description`). None: no projection."""
    raw = [part.strip() for entry in fields or () for part in entry.split(",") if part.strip()]
    if not raw:
        return None
    names = _NAMES[kind]
    definition_keys = (
        {"content", "variables"} if kind == "prompt" else {"description", "body", "assets"}
    )
    paths: list[tuple[str, ...]] = []
    for entry in raw[:100]:
        head, _, rest = entry.partition(".")
        wire = names.get(head)
        valid = wire is not None and (
            not rest or (wire == "definition" and rest in definition_keys)
        )
        if valid and listing and kind == "skill" and wire == "definition":
            valid = f"definition.{rest}" in LISTED_SKILL_PATHS
        if not valid or wire is None:
            raise InvalidQuery(f"unknown or unlisted field path {entry[:200]!r}", param="fields")
        paths.append((wire, rest) if rest else (wire,))
    return paths


def project(doc: dict[str, Any], paths: list[tuple[str, ...]] | None) -> dict[str, Any]:
    """`doc` cut down to `paths` (its `id` always kept, so that a listed item stays named)."""
    if paths is None:
        return doc
    out: dict[str, Any] = {"id": doc["id"]} if "id" in doc else {}
    for path in paths:
        if path[0] not in doc:
            continue
        if len(path) == 1:
            out[path[0]] = doc[path[0]]
        elif path[1] in doc[path[0]]:
            out.setdefault(path[0], {})[path[1]] = doc[path[0]][path[1]]
    return out


def listed(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """A skills list shows no body nor assets, whatever the projection."""
    if kind == "skill" and "definition" in doc:
        definition = {k: v for k, v in doc["definition"].items() if k == "description"}
        doc = {**doc, "definition": definition}
    return doc
