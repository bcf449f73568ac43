"""Transcription benchmark: word error rate and speed (audio seconds transcribed per second of
wall time) of the local engines, Whisper tiny.en (faster-whisper) and pocketsphinx, on sentences
spoken by espeak-ng in several voices (or, without espeak-ng, on the clips the tests ship).

    .venv/bin/python -m bench.audio.run [--sentences harvard|plain] [--speed 140]
        [--voices en-us,en-us+m3,en-us+f2] [--format wav] [--beam N]

The default material is the Harvard sentences, lists 1-4 (`bench/audio/sentences.py`), made for
testing speech systems rather than chosen for being easy; `plain` is the tests' twelve everyday
sentences. `--beam` overrides Whisper's catalog option `beam_size` (default: the engine's, i.e.
faster-whisper's beam of 5; `--beam 1` is greedy decoding).

The engines run as the server runs them (decoding with PyAV, one request at a time on the
engine's worker thread); the model is loaded before timing starts. WER is the word-level edit
distance over the reference's words, after lowercasing and dropping punctuation; numbers that
Whisper writes as digits ("20") count as errors against spelled-out references.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

from bench.audio.sentences import HARVARD
from maestrale.engines.specs import ModelSpec
from maestrale.engines.transcription_types import TranscriptionRequest
from tests.audio.speech import SENTENCES, encode, espeak_available, shipped, speak, wer


def material(
    sentences: tuple[str, ...], voices: list[str], speed: int, container: str
) -> list[tuple[str, str, bytes]]:
    """(voice, reference text, audio) for every sentence and voice."""
    if not espeak_available():
        print("espeak-ng is not installed: using the shipped clips only")
        return [("shipped", clip.text, clip.data) for clip in shipped().values()]
    out = []
    for voice in voices:
        for text in sentences:
            wav = speak(text, voice, speed)
            out.append((voice, text, wav if container == "wav" else encode(wav, container)))
    return out


async def run_engine(name: str, engine: Any, clips: list[tuple[str, str, bytes]]) -> None:
    by_voice: dict[str, list[float]] = {}
    audio_seconds = 0.0
    started = time.perf_counter()
    worst: tuple[float, str, str] = (0.0, "", "")
    for voice, text, data in clips:
        result = await engine.transcribe(TranscriptionRequest(model=name, audio=data))
        error = wer(text, result.text)
        by_voice.setdefault(voice, []).append(error)
        audio_seconds += result.audio_seconds
        worst = max(worst, (error, text, result.text))
    wall = time.perf_counter() - started
    errors = [e for errs in by_voice.values() for e in errs]
    print(f"\n{name}: {len(clips)} clips, {audio_seconds:.1f} s of audio in {wall:.1f} s")
    speed = audio_seconds / wall
    print(f"  speed: {speed:.1f} audio seconds per second (real-time factor {1 / speed:.3f})")
    print(f"  WER mean {statistics.mean(errors):.1%}, median {statistics.median(errors):.1%}")
    for voice, errs in by_voice.items():
        print(f"    {voice:>12}: mean WER {statistics.mean(errs):.1%} over {len(errs)} clips")
    print(f"  worst: {worst[0]:.0%} {worst[1]!r} -> {worst[2]!r}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", default="harvard", choices=["harvard", "plain"])
    parser.add_argument("--speed", type=int, default=140, help="espeak-ng words per minute")
    parser.add_argument("--voices", default="en-us,en-us+m3,en-us+f2")
    parser.add_argument("--format", default="wav", choices=["wav", "mp3", "ogg", "flac", "m4a"])
    parser.add_argument("--engines", default="whisper,pocketsphinx")
    parser.add_argument("--beam", type=int, default=None, help="Whisper's beam_size option")
    args = parser.parse_args()
    sentences = HARVARD if args.sentences == "harvard" else SENTENCES
    clips = material(sentences, args.voices.split(","), args.speed, args.format)
    load = os.getloadavg()[0]
    print(
        f"{len(clips)} clips ({args.sentences} sentences, {args.speed} wpm, {args.format}); "
        f"load average {load:.2f} on {os.cpu_count()} cores"
    )
    wanted = args.engines.split(",")
    if "whisper" in wanted:
        from maestrale.engines.local.whisper import create_engine as whisper

        options = {} if args.beam is None else {"beam_size": args.beam}
        spec = ModelSpec(id="whisper-tiny-en", engine="faster_whisper", options=options)
        engine = whisper(spec)
        await engine.load()
        beam = "" if args.beam is None else f" (beam_size {args.beam})"
        await run_engine(f"whisper-tiny-en{beam}", engine, clips)
        await engine.aclose()
    if "pocketsphinx" in wanted:
        from maestrale.engines.local.sphinx import create_engine as sphinx

        engine2 = sphinx(ModelSpec(id="pocketsphinx-en", engine="pocketsphinx"))
        await engine2.transcribe(TranscriptionRequest(model="p", audio=clips[0][2]))  # load
        await run_engine("pocketsphinx-en", engine2, clips)
        await engine2.aclose()
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
