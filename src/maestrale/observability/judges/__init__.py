"""Judges: automatic evaluators, their revisions, and live judging through the gateway."""
