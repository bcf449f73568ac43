"""Inbound events: webhooks that outside providers call (`webhooks`), and triggers that turn
their verified deliveries into work (`triggers`)."""
