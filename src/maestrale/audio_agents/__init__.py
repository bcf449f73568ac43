"""Audio agents (versioned voice setups: a chat model, a speech model and voice, a transcription
model, turn-taking, instructions, tools) and audio sessions, served over this server's own
session WebSocket (`realtime/`)."""
