"""Pluggable model backends: a Protocol per capability, a sub-package per implementation."""
