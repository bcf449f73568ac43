"""Evaluation pipelines: judges run over the spans that arrive, each verdict a span evaluation."""
