"""An audio agent's (or session's) configuration: checked against the catalog (each model must
exist and serve its part: chat, speech, realtime transcription) and described with its defaults
filled from the catalog (the first model serving each part, the speech model's default voice)."""

from __future__ import annotations

from typing import Any

from maestrale.audio_agents.schemas import ConfigurationIn
from maestrale.core.errors import BadRequest
from maestrale.engines.protocols import SpeechEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.gateway.capabilities import CHAT, SPEECH, TRANSCRIPTION_REALTIME

# The part of a configuration → (catalog capability, what it is for error messages).
PARTS = {
    "llm": (CHAT.catalog_name, "chat completion"),
    "tts": (SPEECH.catalog_name, "speech synthesis"),
    "stt": (TRANSCRIPTION_REALTIME.catalog_name, "realtime transcription"),
}
# Tools a session runs: the conversation runtime's server tools, and function tools run by the
# client over the session WebSocket (`tool_call.started` → `tool_call.result`). Hang-up and call
# transfer (telephony) have no way through it.
SESSION_TOOLS = frozenset({"function", "web_search", "document_library", "connector"})
DEFAULT_SILENCE_MS = 600


class InvalidAudioModel(BadRequest):
    code = "invalid_model"


class UnsupportedVoiceTool(BadRequest):
    code = "tool_not_supported"


def stored(body: ConfigurationIn) -> dict[str, Any]:
    """The configuration as given (what a version keeps)."""
    return body.model_dump(
        mode="json",
        exclude_none=True,
        include={"llm", "tts", "stt", "turn", "instructions", "tools", "welcome_message"},
    )


def check(engines: EngineRegistry, config: dict[str, Any], prefix: str) -> None:
    """400 naming the field when a model is unknown or does not serve its part."""
    for part, (capability, what) in PARTS.items():
        model = (config.get(part) or {}).get("model")
        if model is None:
            continue
        resolved = engines.resolve(model)
        if resolved is None:
            raise InvalidAudioModel(
                f"{prefix}{part}.model: model {model!r} not found", param=f"{prefix}{part}.model"
            )
        if not resolved.spec.has(capability):
            raise InvalidAudioModel(
                f"{prefix}{part}.model: model {model!r} does not serve {what}",
                param=f"{prefix}{part}.model",
            )


def _first(engines: EngineRegistry, capability: str) -> str | None:
    return next((spec.id for spec in engines.serving(capability)), None)


def _voice(engines: EngineRegistry, model: str | None) -> str | None:
    resolved = engines.resolve(model) if model else None
    if resolved is None or not isinstance(resolved.engine, SpeechEngine):
        return None
    voices = resolved.engine.voices(resolved.spec.upstream_model or resolved.spec.id)
    return voices[0].id if voices else None


def described(engines: EngineRegistry, config: dict[str, Any]) -> dict[str, Any]:
    """The configuration with its defaults (AudioAgentConfigurationResponseConfig: llm, tts,
    stt and turn always present)."""
    out = dict(config)
    for part, (capability, _) in PARTS.items():
        values = dict(config.get(part) or {})
        if values.get("model") is None:
            default = _first(engines, capability)
            if default is not None:
                values["model"] = default
        out[part] = values
    if "voice_id" not in out["tts"]:
        voice = _voice(engines, out["tts"].get("model"))
        if voice is not None:
            out["tts"]["voice_id"] = voice
    out["stt"].setdefault("language", None)
    out["turn"] = {"allow_interruptions": True, **dict(config.get("turn") or {})}
    for key in ("instructions", "tools", "welcome_message"):
        out.setdefault(key, None)
    return out


def runnable(engines: EngineRegistry, config: dict[str, Any]) -> dict[str, Any]:
    """The configuration a session runs (defaults filled): 400 when a part has no model in the
    catalog or a tool cannot run in a voice session."""
    out = described(engines, config)
    for part, (_, what) in PARTS.items():
        if out[part].get("model") is None:
            raise InvalidAudioModel(
                f"{part}.model: the catalog has no model for {what}; name one",
                param=f"{part}.model",
            )
    for position, tool in enumerate(out.get("tools") or []):
        if tool.get("type") not in SESSION_TOOLS:
            raise UnsupportedVoiceTool(
                f"tools[{position}]: {tool.get('type')} tools are not supported in a voice "
                f"session (supported: {', '.join(sorted(SESSION_TOOLS))})",
                param=f"tools[{position}]",
            )
    return out
