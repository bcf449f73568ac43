"""Realtime transcription: the WebSocket /v1/audio/transcriptions/realtime of
`client.audio.realtime` (mistralai 2.x), PCM audio in, transcription events out."""
