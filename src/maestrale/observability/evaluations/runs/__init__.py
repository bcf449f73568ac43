"""Evaluation runs, their records, scores and statistics."""
