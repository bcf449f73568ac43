"""Searching the telemetry store: the search expression language (`service_name CONTAINS 'sdk'
AND duration_ns > 5000000000`), compiled to SQL over an entity's fields (traces, spans, logs,
span evaluations), for SQLite and Postgres."""
