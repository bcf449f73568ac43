"""The kit: database, auth, errors, pagination, ids, SSE, blobs, jobs. No business rules."""
