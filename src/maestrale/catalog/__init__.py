"""The /v1/models group: base models from the TOML catalog, fine-tuned models from the database."""
