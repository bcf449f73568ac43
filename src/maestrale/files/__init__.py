"""The /v1/files group: uploads streamed to blob storage, downloads, signed links."""
