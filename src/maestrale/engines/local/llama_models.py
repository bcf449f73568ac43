"""The models one llama.cpp engine holds: its base GGUF, loaded on first use, and the fine-tuned
variants of it that requests name in `weights` (the gateway's local copy of a fine-tuned
model's GGUF), the last `MAX_VARIANTS` of them kept loaded. Touched on the engine's worker
thread only."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from maestrale.engines.local.llama_model import LlamaOptions, LoadedModel, check_file, load
from maestrale.engines.specs import CatalogError
from maestrale.engines.types import EngineError

MAX_VARIANTS = 2


def variant_path(weights: str | None) -> Path | None:
    """The GGUF file a request's `weights` names (a fine-tuned model's), or None (the base)."""
    return Path(weights) if weights else None


class LlamaModels:
    def __init__(self, base: Path, options: LlamaOptions, n_ctx: int) -> None:
        self.base_path = base
        self._options, self._n_ctx = options, n_ctx
        self._base: LoadedModel | None = None
        self._variants: OrderedDict[Path, LoadedModel] = OrderedDict()

    def get(self, variant: Path | None = None) -> LoadedModel:
        """The base model, or the variant of that GGUF file (503 when it cannot be loaded)."""
        if variant is None:
            if self._base is None:
                self._base = self._load(self.base_path)
            return self._base
        loaded = self._variants.pop(variant, None)
        if loaded is None:
            try:
                check_file(variant)
            except CatalogError as exc:
                raise EngineError(503, str(exc), code="engine_unavailable") from exc
            loaded = self._load(variant)
            while len(self._variants) >= MAX_VARIANTS:
                self._variants.popitem(last=False)[1].llm.close()
        self._variants[variant] = loaded
        return loaded

    def _load(self, path: Path) -> LoadedModel:
        try:
            return load(path, self._options, self._n_ctx)
        except RuntimeError as exc:
            raise EngineError(503, str(exc), code="engine_unavailable") from exc

    def close(self) -> None:
        """Free every loaded model."""
        for loaded in [self._base, *self._variants.values()]:
            if loaded is not None:
                loaded.llm.close()
        self._base = None
        self._variants.clear()
