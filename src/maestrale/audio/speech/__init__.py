"""Speech synthesis: POST /v1/audio/speech (the platform's and OpenAI's shapes) and the realtime
speech WebSocket /v1/audio/speech/realtime, PCM from a speech engine encoded as it comes."""
