"""What a fine-tuned model's artifact is: recorded on its row (`FineTunedModel.artifact_format`)
by the job that stores the artifact, read by the gateway to hand the artifact to the engine
that serves it. A model without an artifact is served as its base."""

from __future__ import annotations

from enum import StrEnum


class ArtifactFormat(StrEnum):
    """The kinds of artifact fine-tuning produces, each served its own way."""

    # A whole model in one GGUF file: the base's llama.cpp engine loads it in place of its own.
    GGUF = "gguf"
    # A classifier head (JSON): the base's classifier engine applies it to its embeddings.
    CLASSIFIER = "classifier"
