"""`POST /v1/client/sessions`: short-lived secrets for a browser to open the realtime
WebSockets of one model without the API key (`core/auth/client_sessions` stores and checks
them)."""
