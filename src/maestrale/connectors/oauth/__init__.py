"""OAuth2 for connectors: discovery of the authorization server (`discovery`), PKCE (`pkce`),
the sealed `state` of an authorization request (`state`), and the client side of the flow
(`client`: registration, authorization URL, code exchange, refresh). No storage and no routes
here: the connectors service decides where tokens live (sealed with `SecretBox`) and when to
refresh them (`Tokens.expires_within`)."""

from maestrale.connectors.oauth.client import (
    OAuthError,
    OAuthUnavailable,
    authorization_url,
    exchange_code,
    refresh_tokens,
    register_client,
)
from maestrale.connectors.oauth.discovery import DiscoveryFailed, server_metadata
from maestrale.connectors.oauth.pkce import challenge, new_verifier
from maestrale.connectors.oauth.state import InvalidState, open_state, seal_state
from maestrale.connectors.oauth.tokens import Tokens

__all__ = [
    "DiscoveryFailed",
    "InvalidState",
    "OAuthError",
    "OAuthUnavailable",
    "Tokens",
    "authorization_url",
    "challenge",
    "exchange_code",
    "new_verifier",
    "open_state",
    "refresh_tokens",
    "register_client",
    "seal_state",
    "server_metadata",
]
