"""Span evaluations: the verdicts evaluation pipelines store, searched and aggregated."""
