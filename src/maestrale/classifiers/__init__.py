"""Moderation and classification: /v1/moderations, /v1/classifications and their chat forms."""
