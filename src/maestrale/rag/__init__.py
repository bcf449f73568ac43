"""RAG deployments (search deployments run elsewhere, registered with their indexes and their
reported metrics) and ingestion pipeline configurations (with their run statistics): the
`/v1/rag` groups of mistralai 3.x."""
