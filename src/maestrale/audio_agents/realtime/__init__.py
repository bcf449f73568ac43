"""The voice session WebSocket: transcription → the agent's conversation → speech, with
barge-in."""
