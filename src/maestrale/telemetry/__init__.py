"""The telemetry store: OpenTelemetry spans and logs, received over OTLP (applications, the
official workflow worker) or written by the server itself, kept per workspace, searched and
aggregated with the search expression language, and the traces they make up."""
