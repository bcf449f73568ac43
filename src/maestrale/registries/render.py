"""Rendering of prompts and skills: a logic-less template format, sandboxed by construction.

A prompt's content is text with placeholders `{{ name }}` (spaces inside the braces optional,
names `[A-Za-z_][A-Za-z0-9_]*`), each replaced by the caller's value of that name: a string as
it is, any other JSON value as compact JSON. `{{{{` is a literal `{{` (the escape). Nothing
else is interpreted: `{{ a.b }}`, `{{ x | upper }}`, `{% include "f" %}` stay in the text as
written. A value is looked up by name in the caller's mapping and never touched otherwise, so a
template cannot reach an attribute, a Python object or a file: `{{ __class__ }}` is only a
variable named `__class__`, missing unless the caller gave one.

Skills are bundled into instructions text (`render_skills`): each skill's name, description
and body, then its assets. A text asset of at most `INLINE_ASSET_CHARS` characters is inlined
(while the inlined assets of the bundle stay under `INLINE_TOTAL_CHARS`); any other asset (a
larger text, a raw one) is only named, with its size, so that a skill's files do not crowd out
the conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from maestrale.core.errors import BadRequest, PayloadTooLarge
from maestrale.registries.lookup import RegistryVersion

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
ESCAPE = "{{{{"
# The largest text a rendering may make (UTF-8 bytes): a prompt, or the instructions it joins.
MAX_RENDERED_BYTES = 1 << 20
INLINE_ASSET_CHARS = 4096
INLINE_TOTAL_CHARS = 16384


class MissingVariables(BadRequest):
    code = "missing_prompt_variables"


class RenderedTooLarge(PayloadTooLarge):
    code = "prompt_too_large"


def _tokens(template: str) -> Iterable[tuple[str, str | None]]:
    """The template as (literal text, None) and (placeholder text, name) pieces, in order."""
    start = position = 0
    while (found := template.find("{{", position)) != -1:
        if template.startswith(ESCAPE, found):
            yield template[start:found] + "{{", None
            start = position = found + len(ESCAPE)
            continue
        match = PLACEHOLDER.match(template, found)
        if match is None:
            position = found + 1
            continue
        if found > start:
            yield template[start:found], None
        yield match.group(0), match.group(1)
        start = position = match.end()
    if start < len(template):
        yield template[start:], None


def placeholders(template: str) -> list[str]:
    """The names of the template's placeholders, each once, in order of first use."""
    return list(dict.fromkeys(name for _, name in _tokens(template) if name is not None))


def value_text(value: Any) -> str:
    """How a variable's value reads in a prompt: a string as it is, any other JSON value as
    compact JSON (integers of any size included)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def check_size(text: str, what: str, param: str) -> str:
    """`text`, unless it is larger than `MAX_RENDERED_BYTES` (413 `prompt_too_large`)."""
    if _size(text) > MAX_RENDERED_BYTES:
        raise RenderedTooLarge(f"{what} is larger than {MAX_RENDERED_BYTES} bytes", param=param)
    return text


def render(
    template: str, values: Mapping[str, Any], declared: Iterable[str] = (), *, name: str = ""
) -> str:
    """`template` with its placeholders replaced by `values`. Every declared or used variable
    must have a value (400 `missing_prompt_variables` naming each missing one); the result is at
    most `MAX_RENDERED_BYTES` (413 `prompt_too_large`)."""
    pieces = list(_tokens(template))
    wanted = dict.fromkeys([*declared, *(n for _, n in pieces if n is not None)])
    missing = [variable for variable in wanted if variable not in values]
    if missing:
        of = f" of prompt {name!r}" if name else ""
        raise MissingVariables(
            f"missing prompt variables{of}: {', '.join(missing)}", param="prompt.variables"
        )
    texts = {variable: value_text(values[variable]) for variable in wanted}
    out: list[str] = []
    total = 0
    for text, variable in pieces:
        piece = text if variable is None else texts[variable]
        total += _size(piece)
        if total > MAX_RENDERED_BYTES:  # checked as it grows: a value repeated stops early
            raise RenderedTooLarge(
                f"the rendered prompt is larger than {MAX_RENDERED_BYTES} bytes",
                param="prompt.variables",
            )
        out.append(piece)
    return "".join(out)


def render_prompt(version: RegistryVersion, values: Mapping[str, Any]) -> str:
    """A prompt version's content rendered with `values` (its declared variables required)."""
    definition = version.definition
    declared = [
        str(v["name"])
        for v in definition.get("variables") or []
        if isinstance(v, dict) and isinstance(v.get("name"), str)
    ]
    return render(str(definition.get("content") or ""), values, declared, name=version.name)


def _asset(name: str, asset: Any, budget: list[int]) -> str:
    """One asset's lines in a bundle: inlined when a small text, else named with its size."""
    if not isinstance(asset, dict):
        return f"- {name}"
    executable = " (executable)" if asset.get("isExecutable", asset.get("is_executable")) else ""
    text = asset.get("textContent", asset.get("text_content"))
    if isinstance(text, str):
        if len(text) <= INLINE_ASSET_CHARS and len(text) <= budget[0]:
            budget[0] -= len(text)
            return f"- {name}{executable}:\n```\n{text}\n```"
        return f"- {name}{executable} (text, {len(text)} characters, not shown)"
    raw = asset.get("rawContent", asset.get("raw_content"))
    size = f", {len(raw)} characters encoded" if isinstance(raw, str) else ""
    return f"- {name}{executable} (raw file{size}, not shown)"


def render_skills(skills: list[RegistryVersion]) -> str:
    """The skills bundled as instructions: for each, `## Skill: <name>`, its description, its
    body and its assets (small text assets inlined, the others named)."""
    if not skills:
        return ""
    budget = [INLINE_TOTAL_CHARS]
    parts = ["# Skills", "You can use the following skills."]
    for skill in skills:
        definition = skill.definition
        section = [f"## Skill: {skill.name}"]
        for key in ("description", "body"):
            text = definition.get(key)
            if isinstance(text, str) and text.strip():
                section.append(text.strip())
        assets = definition.get("assets")
        if isinstance(assets, dict) and assets:
            lines = [_asset(str(n), a, budget) for n, a in sorted(assets.items())]
            section.append("Files of this skill:\n" + "\n".join(lines))
        parts.append("\n\n".join(section))
    return check_size("\n\n".join(parts), "the skills' instructions", "skills")
