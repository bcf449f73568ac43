"""Audio transcription: POST /v1/audio/transcriptions, plain and streamed."""
