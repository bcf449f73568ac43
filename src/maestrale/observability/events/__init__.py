"""Chat completion events: search, fields and their options, similar events."""
