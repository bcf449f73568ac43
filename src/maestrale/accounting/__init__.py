"""Usage accounting: tokens, latency, status and cost of each model call, off the hot path."""
