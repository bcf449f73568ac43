"""The generators of the reference pages (docs/hooks/reference.py), without a site build: every
setting, every command and option, every layer is on its page, and what a page claims (a flag
sets a setting) is what the code does. `make docs-build` renders them (and the HTTP API's)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
from mkdocs.exceptions import PluginError
from pydantic import BaseModel, Field

from docs.hooks import reference
from maestrale import cli
from maestrale.config import Settings
from maestrale.config.limits import LimitsConfig


def test_every_setting_has_its_row() -> None:
    page = reference.settings_markdown()
    for name in Settings.model_fields:
        assert f"`MAESTRALE_{name.upper()}`<br>`{name}` |" in page, name
    for name in LimitsConfig.model_fields:
        assert f"| `limits.{name}` |" in page, name
    # Each row under the class that declares it: the mixins' own headings.
    for cls in (Settings, *Settings.__bases__):
        assert f"## `{cls.__name__}`" in page


def test_a_setting_without_description_fails_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    class Bare(BaseModel):
        explained: int = Field(default=1, description="said")
        unexplained: int = 2

    fields = list(Bare.model_fields.items())
    monkeypatch.setattr(reference, "fields_by_class", lambda: [(Settings, fields)])
    with pytest.raises(ValueError, match="setting unexplained has no description"):
        reference.settings_markdown()


def test_defaults_show_neither_secrets_nor_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAESTRALE_SECRET_KEY", "s3cret-from-the-environment")
    monkeypatch.setenv("MAESTRALE_PORT", "9123")
    page = reference.settings_markdown()
    assert "s3cret-from-the-environment" not in page
    assert "9123" not in page
    assert str(Path.cwd()) not in page
    assert str(Path.home()) not in page
    assert "generated once into `<data dir>/secret-key`" in page


def _value(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return []
    return ["7"] if action.type is int else ["docs-reference-value"]


def test_the_flags_a_setting_lists_set_it() -> None:
    """Each flag named in a setting's row changes that setting (on the first command that has it:
    the commands share `cli._settings`)."""
    parsers = dict(reference.commands())
    claims = reference.setting_flags()
    assert {"port", "worker", "worker_concurrency", "data_dir"} <= set(claims)
    for field, by_flag in claims.items():
        for flag, paths in by_flag.items():
            for path in paths[:1]:
                command = parsers[tuple(path.split())]
                action = next(a for a in command._actions if flag in a.option_strings)
                required = [  # the command's other required arguments and options
                    arg
                    for a in command._actions
                    if a.required and a is not action
                    for arg in (*a.option_strings[:1], *_value(a))
                ]
                args = cli._parser().parse_args([*path.split(), flag, *_value(action), *required])
                settings = cli._settings(args)
                assert getattr(settings, field) != Settings.model_fields[field].default, (
                    field,
                    flag,
                    path,
                )


def test_every_command_and_option_is_on_the_page() -> None:
    page = reference.cli_markdown()
    root = reference.parser()
    paths = [path for path, _ in reference.commands(root)]
    assert ("serve",) in paths
    assert ("keys", "create") in paths
    for path, command in reference.commands(root):
        name = " ".join(("maestrale", *path))
        section = re.split(r"\n#+ ", page.split(f"`{name}`\n", 1)[1], maxsplit=1)[0]
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name}: {action.dest} has no help"
            shown = action.option_strings[0] if action.option_strings else action.dest.upper()
            assert f"`{shown}`" in section, (name, shown)
    # The groups list their commands.
    for group in ("keys", "limits", "classifier", "secrets"):
        assert f"## `maestrale {group}`" in page


def test_every_layer_is_drawn_with_its_label() -> None:
    picture = reference.layers_markdown()
    config = reference.importlinter()
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    for layer in layers:
        for member in re.split(r"[|:]", layer):
            assert f" {member.strip()} " in picture, member
    labels = reference.layer_labels(layers)
    assert labels["__main__"].startswith("The composition root")
    assert "The kit" in picture
    for contract in config["contracts"]:
        assert contract["name"] in picture


def test_operations_are_listed_under_each_of_their_tags() -> None:
    spec: dict[str, Any] = {
        "paths": {
            "/v1/b": {"get": {"tags": ["beta", "alpha"], "operationId": "b_get"}},
            "/v1/a": {
                "post": {"tags": ["alpha"], "operationId": "a_post"},
                "get": {"operationId": "a_get"},
                "parameters": [],
            },
        }
    }
    groups = reference.operations_by_tag(spec)
    assert list(groups) == ["alpha", "beta", "untagged"]
    assert [(m, p) for m, p, _ in groups["alpha"]] == [("POST", "/v1/a"), ("GET", "/v1/b")]
    assert [op["operationId"] for _, _, op in groups["untagged"]] == ["a_get"]


def test_a_marker_without_a_generator_fails_the_build() -> None:
    assert reference.on_page_markdown("no marker here") == "no marker here"
    with pytest.raises(PluginError, match="no generator named 'nothing'"):
        reference.on_page_markdown("<!-- generated: nothing -->")
