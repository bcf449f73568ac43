"""The prompt renderer and the skills' bundle (`registries.render`): placeholders filled with the
caller's values, the escape, nothing else interpreted, missing variables and size refused."""

from __future__ import annotations

from typing import Any

import pytest

from maestrale.registries.lookup import RegistryVersion
from maestrale.registries.references import PromptRef, Resolved
from maestrale.registries.render import (
    INLINE_ASSET_CHARS,
    MAX_RENDERED_BYTES,
    MissingVariables,
    RenderedTooLarge,
    placeholders,
    render,
    render_prompt,
    render_skills,
)


def prompt(content: str, variables: list[str] | None = None) -> RegistryVersion:
    definition: dict[str, Any] = {"content": content}
    if variables is not None:
        definition["variables"] = [{"name": name} for name in variables]
    return RegistryVersion("prompt", "prm_1", "greeting", 3, definition)


def test_placeholders_are_filled_strings_as_they_are_other_values_as_json() -> None:
    template = "Hi {{name}}, {{ name }}! Order {{  order }} ({{n}}, {{flag}}, {{none}}, {{big}})"
    values = {
        "name": "Ada",
        "order": {"id": 7, "items": ["a", "é"]},
        "n": 1.5,
        "flag": True,
        "none": None,
        "big": 2**70,
    }
    assert render(template, values) == (
        'Hi Ada, Ada! Order {"id":7,"items":["a","é"]} (1.5, true, null, 1180591620717411303424)'
    )
    # A value is inserted as text, never rendered again.
    assert render("{{a}}", {"a": "{{b}}"}) == "{{b}}"
    assert placeholders("{{ b }} {{a}} {{b}} {{{{c}}") == ["b", "a"]


def test_the_escape_and_everything_else_stays_literal() -> None:
    assert render("{{{{ name }} is {{name}}", {"name": "x"}) == "{{ name }} is x"
    literal = (
        "{{ a.b }} {{ x | upper }} {{ x() }} {% include '/etc/passwd' %} {# c #} "
        "{{ ''.__class__.__mro__ }} {{{ x }}} }}"
    )
    # Only `{{ x }}` inside `{{{ x }}}` is a placeholder.
    assert render(literal, {"x": "X"}) == literal.replace("{{ x }}", "X")


def test_a_template_reaches_no_python_object() -> None:
    # `__class__` is only a name to look up among the caller's values.
    with pytest.raises(MissingVariables) as missing:
        render("{{ __class__ }} {{ __globals__ }}", {})
    assert missing.value.status_code == 400
    assert "__class__, __globals__" in missing.value.message
    assert render("{{ __class__ }}", {"__class__": "plain"}) == "plain"


def test_every_missing_variable_is_named_declared_ones_too() -> None:
    version = prompt("Hello {{ name }} from {{ city }}", ["name", "city", "tone"])
    with pytest.raises(MissingVariables) as missing:
        render_prompt(version, {"city": "Oslo"})
    error = missing.value
    assert error.code == "missing_prompt_variables" and error.param == "prompt.variables"
    assert error.message == "missing prompt variables of prompt 'greeting': name, tone"
    assert render_prompt(version, {"name": "A", "city": "B", "tone": "C"}) == "Hello A from B"


def test_the_rendered_size_is_bounded_as_it_grows() -> None:
    big = "x" * (MAX_RENDERED_BYTES // 4)
    assert len(render("{{v}}" * 4, {"v": big})) == MAX_RENDERED_BYTES
    with pytest.raises(RenderedTooLarge) as too_large:
        render("{{v}}" * 100_000, {"v": big})
    assert too_large.value.status_code == 413
    resolved = Resolved("p" * MAX_RENDERED_BYTES, "skills", {})
    with pytest.raises(RenderedTooLarge):
        resolved.instructions("own")
    assert Resolved("P", None, {}).instructions("own") == "P\n\nown"
    assert Resolved(None, None, {}).instructions(None) is None


def test_references_take_numeric_string_versions_and_one_selector() -> None:
    assert PromptRef.model_validate({"id": "p", "version": "2"}).version == 2
    for bad in (
        {"id": "p", "version": "two"},
        {"id": "p", "version": 2**64},
        {"id": "p", "version": 0},
    ):
        with pytest.raises(ValueError, match="version"):
            PromptRef.model_validate(bad)
    with pytest.raises(ValueError, match="not both"):
        PromptRef.model_validate({"id": "p", "version": 1, "alias": "production"})


def test_skills_bundle_names_descriptions_bodies_and_small_text_assets() -> None:
    small = {"textContent": "print('hi')", "isExecutable": True}
    large = {"textContent": "y" * (INLINE_ASSET_CHARS + 1)}
    raw = {"rawContent": "AAEC"}
    skills = [
        RegistryVersion(
            "skill",
            "skl_1",
            "pdf-tools",
            2,
            {
                "description": "Work with PDF files.",
                "body": "Split pages with split.py.",
                "assets": {"split.py": small, "big.txt": large, "logo.png": raw},
            },
        ),
        RegistryVersion("skill", "skl_2", "tone", 1, {"body": "Be kind."}),
    ]
    text = render_skills(skills)
    assert text.startswith("# Skills")
    assert "## Skill: pdf-tools\n\nWork with PDF files.\n\nSplit pages with split.py." in text
    assert "- split.py (executable):\n```\nprint('hi')\n```" in text
    assert f"- big.txt (text, {INLINE_ASSET_CHARS + 1} characters, not shown)" in text
    assert "- logo.png (raw file, 4 characters encoded, not shown)" in text
    assert "y" * 100 not in text
    assert text.endswith("## Skill: tone\n\nBe kind.")
    assert render_skills([]) == ""
