"""A version's definition as stored: a prompt's variables derived from or checked against its
`{{ name }}` placeholders (read as `render` reads them), and the hash that finds an identical
definition."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from maestrale.core.validation import FieldInvalid
from maestrale.registries.errors import UndeclaredVariable
from maestrale.registries.render import placeholders
from maestrale.registries.schemas import (
    MAX_VARIABLES,
    PromptDefinitionIn,
    SkillDefinitionIn,
    definition_doc,
)


def prompt_definition(definition: PromptDefinitionIn) -> dict[str, Any]:
    """The stored document of a prompt definition. Variables omitted: the placeholders, in
    order; given: every placeholder must be among them (400 naming the first that is not)."""
    used = placeholders(definition.content)
    if definition.variables is None:
        if len(used) > MAX_VARIABLES:
            raise FieldInvalid(
                ["body", "definition", "content"],
                f"the content uses {len(used)} variables, more than {MAX_VARIABLES}",
            )
        return {"content": definition.content, "variables": [{"name": name} for name in used]}
    declared = {variable.name for variable in definition.variables}
    for name in used:
        if name not in declared:
            raise UndeclaredVariable(
                f"the content uses the variable {name!r}, which `variables` does not declare",
                param="definition.variables",
            )
    return definition_doc(definition)


def skill_definition(definition: SkillDefinitionIn) -> dict[str, Any]:
    return definition_doc(definition)


def definition_hash(document: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()
