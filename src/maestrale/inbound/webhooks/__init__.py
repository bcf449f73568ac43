"""Inbound webhooks (`/v1/webhooks`): endpoints of this server that an outside provider calls,
each verifying that provider's signature, refusing stale and replayed deliveries, recording
every delivery and handing the verified ones to the job queue (`inbound.delivery`)."""
