"""Document libraries: documents, their processing, and the index that answers searches."""
