"""Realtime speech: the WebSocket /v1/audio/speech/realtime of `client.audio.realtime_speech`
(mistralai 3.x), text in as it is written, audio out sentence by sentence."""
