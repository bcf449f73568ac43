"""Rate limits, the spend limit and the usage report (/v1/admin/rate-limit,
/v1/admin/spend-limit, /v1/admin/usage)."""
