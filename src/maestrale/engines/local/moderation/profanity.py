"""The offensive-language signal: `alt-profanity-check`'s trained linear model (in its wheel).

It is a bag-of-words linear SVM calibrated to a probability, trained on offensive and
non-offensive social-media texts: it recognises insults, slurs and obscenities, not meaning (a
polite threat scores low, a friendly swear word scores high). The engine uses it as one signal
of `hate_and_discrimination`, `violence_and_threats` and `sexual`, beside embedding similarity.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from maestrale.engines.types import EngineError


class ProfanityModel:
    """`predict_prob` of alt-profanity-check, imported on first use (it loads two joblib files)."""

    def __init__(self) -> None:
        self._predict: Callable[[Sequence[str]], Any] | None = None

    def _loaded(self) -> Callable[[Sequence[str]], Any]:
        if self._predict is None:
            try:
                # Imported on first use: it loads its joblib model files at import.
                module = importlib.import_module("profanity_check")
            except ImportError as exc:
                raise EngineError(
                    503,
                    f"alt-profanity-check is not installed ({exc}); "
                    "install it with: pip install 'maestrale[moderation]'",
                    code="engine_unavailable",
                ) from exc
            self._predict = module.predict_prob
        return self._predict

    def load(self) -> None:
        self._loaded()

    def scores(self, texts: Sequence[str]) -> list[float]:
        """The probability that each text is offensive, in [0, 1]."""
        if not texts:
            return []
        return [float(p) for p in self._loaded()(list(texts))]
