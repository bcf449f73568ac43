"""The sealed columns of webhooks, for `maestrale secrets reseal` (the command line adds them to
the connectors' own)."""

from __future__ import annotations

from maestrale.connectors.commands import Sealed
from maestrale.inbound.webhooks.service import ENCRYPTION_KEY, SECRET
from maestrale.inbound.webhooks.tables import Webhook

SEALED = (
    Sealed(Webhook, "secret_sealed", SECRET),
    Sealed(Webhook, "encryption_key_sealed", ENCRYPTION_KEY),
)
