"""Observability: chat completion events, judges, campaigns and datasets."""
