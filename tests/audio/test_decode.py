"""PyAV decoding of the local engines: containers recognised by signature, 16 kHz mono float32,
400 for what is not audio (or would make FFmpeg open other files), 413 past the duration limit."""

from __future__ import annotations

import numpy as np
import pytest

from maestrale.engines.types import EngineError
from tests.audio.speech import ENCODINGS, encode, espeak_available, shipped, speak

pytest.importorskip("av")

from maestrale.engines.local.audio_decode import SAMPLE_RATE, decode, sniff_format


@pytest.mark.parametrize("name", sorted(shipped()))
def test_shipped_formats_decode_to_16k_mono(name: str) -> None:
    audio = decode(shipped()[name].data, 60)
    assert audio.samples.dtype == np.float32
    assert audio.samples.ndim == 1
    assert 3.8 < audio.seconds < 4.0
    peak = float(np.abs(audio.samples).max())
    assert 0.1 < peak <= 1.0  # speech, not silence, and in range
    pcm = audio.pcm16()
    assert len(pcm) == 2 * len(audio.samples)


def test_formats_are_recognised_by_their_signature() -> None:
    expected = {".wav": "wav", ".flac": "flac", ".ogg": "ogg", ".mp3": "mp3", ".m4a": "mp4"}
    for name, clip in shipped().items():
        assert sniff_format(clip.data) == expected[name[name.rindex(".") :]]
    assert sniff_format(b"\x1aE\xdf\xa3....") == "matroska"
    assert sniff_format(b"\xff\xf1\x50\x80") == "aac"
    assert sniff_format(b"\xff\xfb\x90\x00") == "mp3"


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"plain text, not audio",
        # A playlist would make FFmpeg's probing open the URLs it lists: never probed.
        b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nhttp://127.0.0.1:9/a.ts\n",
        b"ffconcat version 1.0\nfile /etc/passwd\n",
        b"RIFF\x00\x00\x00\x00WAVEfmt " + b"\x00" * 64,
        b"fLaC" + b"\x00" * 100,
    ],
)
def test_what_is_not_audio_is_400(payload: bytes) -> None:
    with pytest.raises(EngineError) as caught:
        decode(payload, 60)
    assert caught.value.status == 400
    assert caught.value.code == "invalid_audio"


def test_audio_over_the_duration_limit_is_413() -> None:
    with pytest.raises(EngineError) as caught:
        decode(shipped()["report.flac"].data, 2.0)
    assert caught.value.status == 413
    assert caught.value.code == "audio_too_long"
    # Long silence compresses to almost nothing: the limit is checked while decoding.
    silence = np.zeros(SAMPLE_RATE * 600, dtype="<i2").tobytes()
    header = wav_header(len(silence))
    flac = encode(header + silence, "flac")
    assert len(flac) < 200_000
    with pytest.raises(EngineError) as caught:
        decode(flac, 30)
    assert caught.value.status == 413


def wav_header(size: int, rate: int = SAMPLE_RATE) -> bytes:
    import struct

    return (
        b"RIFF"
        + struct.pack("<I", 36 + size)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
        + b"data"
        + struct.pack("<I", size)
    )


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")
@pytest.mark.parametrize("container", sorted(ENCODINGS))
def test_generated_speech_decodes_in_every_container(container: str) -> None:
    wav = speak("the meeting has been moved to tuesday afternoon")
    audio = decode(encode(wav, container), 60)
    reference = decode(wav, 60)
    assert abs(audio.seconds - reference.seconds) < 0.1
