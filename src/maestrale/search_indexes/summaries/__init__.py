"""The summary field of a search index, per language: read (GET), written by hand (PUT), or
generated (POST) by the chat engine in a durable job (`search_indexes.summary`) that samples
the index's chunks; the POST's `application/x-ndjson` stream follows that job."""
