"""In-process local engines of the `[local]` extra: `llama_cpp` (chat, FIM) and `e5` (embeddings).

Each engine lives in its own module, imported only when a catalog entry names it, so that this
package imports nothing heavy by itself.
"""

import importlib.util
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from maestrale.engines.specs import CatalogError, ModelSpec

Options = TypeVar("Options", bound=BaseModel)


def require(*modules: str) -> None:
    """Raise ImportError (the registry's sign of a missing extra) unless every module can be
    imported, without importing it: heavy libraries load with their engine's first request,
    not when the server starts."""
    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise ImportError(f"No module named {name!r}")


def engine_options(model: type[Options], spec: ModelSpec) -> Options:
    """The catalog entry's `options` as `model`, or `CatalogError` naming the engine and what is
    wrong."""
    try:
        return model.model_validate(spec.options)
    except ValidationError as exc:
        raise CatalogError(f"invalid {spec.engine} options: {exc}") from exc
