"""Client sessions: short-lived secrets (`rt_...`) that a server mints with its API key
(`POST /v1/client/sessions`) for a browser, which opens the realtime WebSockets of one model
with them instead of the key. Only their hash is stored; a secret acts as the key that minted
it (revoking the key revokes its secrets), for its model only, until it expires."""
