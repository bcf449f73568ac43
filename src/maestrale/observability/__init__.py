"""Observability: chat completion events, judges, campaigns and datasets, one sub-package each.

Shared by them: `errors` (the group's error body and route class), `fields` and `filters` (the
searchable event fields and the search_params compiler) and `pages` (numbered page links)."""
