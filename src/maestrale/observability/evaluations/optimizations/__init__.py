"""Optimizations of an evaluation, whose trials are its runs."""
