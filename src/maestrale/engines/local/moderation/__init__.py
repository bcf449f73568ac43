"""Local moderation: offensive-language model, PII recognisers and embedding similarity."""
