"""Retrieval over a context search index: `search` (nearest neighbours, keywords, their fusion,
filtered), and the reading operations an agent uses to walk a source (`navigate`, `read`,
`grep`, one chunk by id). Every chunk is a library chunk of the index (`library_id` = the
index's id), so the libraries' vector and keyword indexes serve both APIs."""
