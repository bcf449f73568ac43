"""Reading library documents: bytes → pages of text → chunks with their page and offsets →
embeddings, with no database (`pipeline.ingest` does it all)."""
