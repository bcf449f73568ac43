"""The TOML catalog: defaults, merging, validation errors that name the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.protocols import ChatEngine, EmbeddingsEngine, FimEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import CatalogError, load_catalog


def test_defaults_have_the_builtin_models() -> None:
    registry = EngineRegistry(load_catalog())
    echo = registry.resolve("maestrale-echo")
    assert echo is not None
    assert registry.resolve("echo") is echo
    assert isinstance(echo.engine, BuiltinEngine)
    assert isinstance(echo.engine, ChatEngine)
    assert isinstance(echo.engine, FimEngine)
    embed = registry.resolve("maestrale-embed")
    assert embed is not None
    assert isinstance(embed.engine, EmbeddingsEngine)
    assert embed.engine is echo.engine  # one engine object per engine and upstream


def test_file_entries_replace_and_disable_defaults(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        """
[[models]]
id = "maestrale-echo"
engine = "builtin"
aliases = ["parrot"]
capabilities = ["completion_chat"]
max_context_length = 1000
price = { input_per_million = 0.5, output_per_million = 1.5 }

[[models]]
id = "maestrale-embed"
engine = "builtin"
enabled = false
"""
    )
    specs = {s.id: s for s in load_catalog(path)}
    assert "maestrale-embed" not in specs
    assert "maestrale-echo" in specs
    assert specs["maestrale-echo"].aliases == ["parrot"]
    assert specs["maestrale-echo"].price.output_per_million == 1.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[models]]\nid = 'x'\n", "engine"),
        ("[[models]]\nid = 'x'\nengine = 'builtin'\ncapabilities = ['telepathy']\n", "telepathy"),
        ("[[models]]\nid = 'x'\nengine = 'builtin'\nsurprise = 1\n", "surprise"),
        ("models = 3\n", "array of tables"),
        ("[[models]\n", "invalid TOML"),
        ("[[models]]\nid = 'x'\nengine = 'builtin'\naliases = ['echo']\n", "'echo'"),
    ],
)
def test_invalid_files_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text(text)
    with pytest.raises(CatalogError, match=message):
        load_catalog(path)


def test_unknown_engine_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text("[[models]]\nid = 'x'\nengine = 'warp-drive'\n")
    with pytest.raises(CatalogError, match="unknown engine 'warp-drive'"):
        EngineRegistry(load_catalog(path))


def test_engines_whose_extra_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from maestrale.engines import registry as registry_module

    fake = {
        **registry_module.ENGINES,
        "ghost": ("maestrale.engines.no_such_module:create", "ghost"),
    }
    monkeypatch.setattr(registry_module, "ENGINES", fake)
    path = tmp_path / "models.toml"
    path.write_text("[[models]]\nid = 'x'\nengine = 'ghost'\noptional = true\n")
    registry = EngineRegistry(load_catalog(path))
    assert registry.resolve("x") is None  # skipped with a warning
    assert registry.resolve("maestrale-echo") is not None
    path.write_text("[[models]]\nid = 'x'\nengine = 'ghost'\n")
    with pytest.raises(CatalogError, match=r"pip install 'maestrale\[ghost\]'"):
        EngineRegistry(load_catalog(path))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read"):
        load_catalog(tmp_path / "absent.toml")
