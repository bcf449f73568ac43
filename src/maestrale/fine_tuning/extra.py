"""Whether this installation can train: the `[training]` extra (torch, transformers, peft,
gguf) for completion jobs; classifier heads train with torch as well."""

from __future__ import annotations

import importlib.util

from maestrale.core.errors import BadRequest

EXTRA_MODULES = {
    "completion": ("torch", "transformers", "peft", "gguf"),
    "classifier": ("torch",),
}


class TrainingExtraMissing(BadRequest):
    code = "training_extra_missing"


def missing(job_type: str) -> list[str]:
    """The modules of the extra that job type needs and that are not installed."""
    return [name for name in EXTRA_MODULES[job_type] if importlib.util.find_spec(name) is None]


def require(job_type: str) -> None:
    """400 `training_extra_missing` when the training extra is not installed."""
    absent = missing(job_type)
    if absent:
        raise TrainingExtraMissing(
            f"{job_type} fine-tuning needs the training extra, which is not installed here "
            f"(missing: {', '.join(absent)}): pip install 'maestrale[training]'",
            param="model",
        )
