"""Context search indexes (`/v1/context/search-indexes`): retrieval as an API over the document
libraries' ingestion pipeline and index."""
