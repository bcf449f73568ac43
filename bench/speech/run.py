"""Speech synthesis benchmark: time to first audio and real-time factor of the local speech
engines, Piper (en_US joe medium) and espeak-ng, as the server runs them, beside each engine's
own command-line tool on the same text and voice.

    .venv/bin/python -m bench.speech.run [--runs 5] [--engines piper,espeak]

For each text (one sentence, and a paragraph of five), the engine is asked to speak it `--runs`
times (the Piper voice is loaded before timing starts; its cold load is printed apart):
- first audio: from the call to the first PCM chunk (a sentence) in the caller's hands;
- RTF (real-time factor): wall time of the whole synthesis over the seconds of audio made
  (0.1 = ten times faster than real time). Medians are printed.
The command-line tools are timed the same way on the same text: `python -m piper -m MODEL -f
out.wav` and `espeak-ng -w out.wav` for the RTF (a whole process: start-up and, for Piper, its
model load included, as a caller of the tool pays them), and their streaming forms (`piper
--output-raw`, `espeak-ng --stdout`) for the first audio byte (past espeak-ng's WAV header).
Targets of issue 35: first audio within 300 ms for one sentence, RTF at most 0.3 on 2 cores.

Through the server (`--server`, default on): a live `maestrale serve` (SQLite, one process) is
asked `POST /v1/audio/speech` with `stream: true` (the platform's SSE, mp3) and `response_format:
pcm`: first audio is from the request to the first `speech.audio.delta` read by the client, the
RTF the whole answer's time over its audio (the HTTP, encoding and accounting costs included).

Intelligibility (with the [audio] extra): the word error rate of the local Whisper tiny.en on each
engine's speech of the tests' twelve everyday sentences (`tests/audio/speech.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import httpx
import orjson

from maestrale.engines.specs import ModelSpec
from maestrale.engines.speech_types import SpeechChunk, SpeechRequest
from maestrale.engines.transcription_types import TranscriptionRequest
from maestrale.voices.sample import wav_bytes
from tests.audio.speech import SENTENCES, wer

TEXTS = {
    "sentence": "The weather today is sunny with a light breeze from the west.",
    "paragraph": (
        "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background. "
        "It is easy to tell the depth of a well. These days a chicken leg is a rare dish. "
        "Rice is often served in round bowls."
    ),
}
WAV_HEADER = 44  # espeak-ng's --stdout header, before the first sample


async def engine_run(engine: Any, text: str, voice: str | None) -> tuple[float, float, float]:
    """(first audio s, total s, audio s) of one synthesis through the engine."""
    start = time.perf_counter()
    first = 0.0
    audio = 0.0
    async for chunk in engine.synthesize(SpeechRequest("bench", text, voice=voice)):
        if not audio:
            first = time.perf_counter() - start
        audio += chunk.seconds
    return first, time.perf_counter() - start, audio


def file_run(argv: list[str], text: str, out: Path) -> tuple[float, float]:
    """(total s, audio s) of the tool writing `out` from `text`."""
    start = time.perf_counter()
    subprocess.run(argv, input=text.encode(), check=True, capture_output=True)
    total = time.perf_counter() - start
    with wave.open(str(out)) as wav:
        return total, wav.getnframes() / wav.getframerate()


def stream_run(argv: list[str], text: str, skip: int) -> float:
    """Seconds from the tool's start to its first audio byte on stdout (past `skip` bytes)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(text.encode())
    process.stdin.close()
    seen, first = 0, 0.0
    while chunk := os.read(process.stdout.fileno(), 65536):
        seen += len(chunk)
        if not first and seen > skip:
            first = time.perf_counter() - start
    process.wait()
    return first


def as_wav(chunks: list[SpeechChunk]) -> bytes:
    return wav_bytes(b"".join(chunk.pcm for chunk in chunks), chunks[0].sample_rate)


async def intelligibility(engine: Any, voice: str | None, whisper: Any) -> None:
    """Whisper's word error rate on the engine's speech of the everyday sentences."""
    if whisper is None:
        return
    errors = []
    for text in SENTENCES:
        request = SpeechRequest("bench", text.capitalize() + ".", voice=voice)
        chunks = [chunk async for chunk in engine.synthesize(request)]
        heard = await whisper.transcribe(
            TranscriptionRequest(model="whisper", audio=as_wav(chunks), temperature=0.0)
        )
        errors.append(wer(text, heard.text))
    mean = statistics.mean(errors)
    print(f"  Whisper tiny.en hears it back: WER {mean:.1%} over {len(errors)} sentences")


def report(name: str, text: str, runs: list[tuple[float, float, float]]) -> None:
    first = statistics.median(r[0] for r in runs)
    rtf = statistics.median(r[1] / r[2] for r in runs)
    audio = runs[0][2]
    print(
        f"  {name:<34} {text:<9} {audio:6.2f} s audio  first {first * 1000:6.0f} ms  RTF {rtf:.3f}"
    )


async def bench_piper(runs: int, whisper: Any) -> None:
    from maestrale.engines.local.piper import create_engine, joe_voice

    engine = create_engine(ModelSpec(id="piper-joe-en", engine="piper"))
    started = time.perf_counter()
    await engine.load()
    print(f"\npiper (en_US-joe-medium): voice loaded in {time.perf_counter() - started:.2f} s")
    await engine_run(engine, "Warm up.", None)
    voice = joe_voice()
    cli = [sys.executable, "-m", "piper", "-m", voice.model_path, "-c", str(voice.config_path)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.wav"
        for label, text in TEXTS.items():
            report(
                "maestrale engine",
                label,
                [await engine_run(engine, text, None) for _ in range(runs)],
            )
            cli_runs = []
            for _ in range(runs):
                total, audio = file_run([*cli, "-f", str(out)], text, out)
                first = stream_run([*cli, "--output-raw"], text, 0)
                cli_runs.append((first, total, audio))
            report("python -m piper (process)", label, cli_runs)
    await intelligibility(engine, None, whisper)
    await engine.aclose()


async def bench_espeak(runs: int, whisper: Any) -> None:
    from maestrale.engines.local.espeak import create_engine

    engine = create_engine(ModelSpec(id="espeak-ng", engine="espeak"))
    print("\nespeak-ng (en-us, 175 wpm)")
    cli = [shutil.which("espeak-ng") or "espeak-ng", "--stdin", "-v", "en-us", "-s", "175"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.wav"
        for label, text in TEXTS.items():
            report(
                "maestrale engine",
                label,
                [await engine_run(engine, text, "en-us") for _ in range(runs)],
            )
            cli_runs = []
            for _ in range(runs):
                total, audio = file_run([*cli, "-w", str(out)], text, out)
                first = stream_run([*cli, "--stdout"], text, WAV_HEADER)
                cli_runs.append((first, total, audio))
            report("espeak-ng (process)", label, cli_runs)
    await intelligibility(engine, "en-us", whisper)


async def server_run(
    client: httpx.AsyncClient, model: str, text: str, fmt: str
) -> tuple[float, float, float]:
    """(first audio s, total s, 0) of one streamed speech request to the live server (the audio's
    length is measured apart: an MP3's frames do not tell it exactly)."""
    start = time.perf_counter()
    first = 0.0
    body = {"model": model, "input": text, "stream": True, "response_format": fmt}
    async with client.stream("POST", "/v1/audio/speech", json=body) as answer:
        answer.raise_for_status()
        async for line in answer.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = orjson.loads(line[5:])
            if event.get("type") == "speech.audio.delta" and not first:
                first = time.perf_counter() - start
    return first, time.perf_counter() - start, 0.0


async def bench_server(runs: int, models: list[str]) -> None:
    """The engines' figures through `POST /v1/audio/speech` on a live server."""
    from tests.support.app_fixtures import API_KEY
    from tests.support.live import start_server, stop_server

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        proc, url = await asyncio.to_thread(
            start_server, data, env={"MAESTRALE_LOG_LEVEL": "WARNING"}
        )
        headers = {"Authorization": f"Bearer {API_KEY}"}
        try:
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
                for model in models:
                    print(f"\n{model} through the server (POST /v1/audio/speech, streamed)")
                    await server_run(client, model, "Warm up.", "mp3")
                    for fmt in ("mp3", "pcm"):
                        for label, text in TEXTS.items():
                            measured = [
                                await server_run(client, model, text, fmt) for _ in range(runs)
                            ]
                            audio = await _audio_seconds(client, model, text)
                            report(
                                f"server, {fmt}",
                                label,
                                [(first, total, audio) for first, total, _ in measured],
                            )
        finally:
            await asyncio.to_thread(stop_server, proc)


async def _audio_seconds(client: httpx.AsyncClient, model: str, text: str) -> float:
    """The seconds of audio of `text` in `model`'s voice (WAV, plain answer)."""
    answer = await client.post(
        "/v1/audio/speech", json={"model": model, "input": text, "response_format": "wav"}
    )
    answer.raise_for_status()
    data = base64.b64decode(answer.json()["audio_data"])
    return (len(data) - 44) / 2 / int.from_bytes(data[24:28], "little")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engines", default="piper,espeak")
    parser.add_argument("--no-server", action="store_true", help="skip the live server's figures")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"{args.runs} runs each, medians; load average {load:.2f} on {os.cpu_count()} cores")
    wanted = args.engines.split(",")
    whisper: Any = None
    if importlib.util.find_spec("faster_whisper") is not None:
        from maestrale.engines.local.whisper import create_engine as whisper_engine

        whisper = whisper_engine(ModelSpec(id="whisper-tiny-en", engine="faster_whisper"))
        await whisper.load()
    if "piper" in wanted:
        await bench_piper(args.runs, whisper)
    if "espeak" in wanted:
        if shutil.which("espeak-ng") is None:
            print("\nespeak-ng is not installed: skipped")
        else:
            await bench_espeak(args.runs, whisper)
    if whisper is not None:
        await whisper.aclose()
    if not args.no_server:
        models = {"piper": "piper-joe-en", "espeak": "espeak-ng"}
        await bench_server(args.runs, [models[name] for name in wanted if name in models])
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
