"""Evaluations v2, offline half: projects, evaluations, runs, records, optimizations."""
