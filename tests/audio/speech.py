"""Speech test material: espeak-ng clips made on the fly, the clips shipped beside this file for
machines without espeak-ng, PyAV re-encoding into other containers, and the word error rate."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
# Sentences of the WER benchmark: plain words espeak-ng pronounces clearly.
SENTENCES = (
    "hello world this is a test of the transcription service",
    "the weather today is sunny with a light breeze from the west",
    "please send the report to the finance team before friday",
    "my phone number changed last week so update your records",
    "the train to the city leaves every twenty minutes",
    "we need more coffee and some milk for the office kitchen",
    "she opened the window and looked at the garden",
    "the meeting has been moved to tuesday afternoon",
    "turn left at the next corner and park near the bank",
    "thank you for calling please leave a message after the tone",
    "the children played football in the park until dark",
    "our new software update fixes several important bugs",
)
# Container name → (PyAV format, codec, file suffix).
ENCODINGS = {
    "wav": ("wav", "pcm_s16le", ".wav"),
    "flac": ("flac", "flac", ".flac"),
    "ogg": ("ogg", "libopus", ".ogg"),
    "mp3": ("mp3", "libmp3lame", ".mp3"),
    "m4a": ("ipod", "aac", ".m4a"),
}


@dataclass(frozen=True)
class Clip:
    name: str
    text: str
    data: bytes


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speak(text: str, voice: str = "en-us", speed: int = 150) -> bytes:
    """A WAV file of espeak-ng saying `text` (22.05 kHz mono)."""
    done = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return done.stdout


def encode(wav: bytes, container: str, rate: int = 16_000) -> bytes:
    """`wav` re-encoded as mono `rate` Hz audio in `container` (a key of ENCODINGS), with PyAV."""
    import av

    fmt, codec, _ = ENCODINGS[container]
    out = io.BytesIO()
    with av.open(io.BytesIO(wav), "r") as source, av.open(out, "w", format=fmt) as sink:
        stream: Any = sink.add_stream(codec, rate=rate, layout="mono")
        if codec not in ("pcm_s16le", "flac"):
            stream.bit_rate = 64_000  # lame's default at 16 kHz garbles speech for Whisper
        resampler = av.AudioResampler(format=stream.codec_context.format, layout="mono", rate=rate)
        for frame in source.decode(source.streams.audio[0]):
            for out_frame in resampler.resample(frame):
                sink.mux(stream.encode(out_frame))
        for out_frame in resampler.resample(None):
            sink.mux(stream.encode(out_frame))
        sink.mux(stream.encode(None))
    return out.getvalue()


@cache
def shipped() -> dict[str, Clip]:
    """The shipped clips by file name, with their reference transcripts."""
    manifest = json.loads((DATA / "transcripts.json").read_text())
    return {name: Clip(name, text, (DATA / name).read_bytes()) for name, text in manifest.items()}


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", " ")).split()


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate: word-level edit distance over the reference's word count."""
    ref, hyp = words(reference), words(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        current = [i]
        for j, h in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1] / max(len(ref), 1)
