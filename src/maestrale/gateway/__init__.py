"""The gateway: every model call, validated, limited and accounted the same way.

- `gateway`: `Gateway` (open, admit, run, stream, and typed shortcuts chat/fim/embed/stream_chat/
  stream_fim); `capabilities`: what a call asks of its model (`CHAT`, `OCR`...), which types the
  call's engine; `call`: `Call[E]`, `Report`, `engine_failure`; `accounting`: reservations handed
  back to their hooks, usage rows and chat completion events; `streams`: streamed calls and
  their tallies; `hooks`: `Caller`, `CallHook` (limits); `estimates`: token estimates;
  `executors`: endpoints callable without HTTP (batch); `messages`: the wire chat message;
  `responses`: JSON responses with the overhead header; `dependencies`: FastAPI access.
"""
