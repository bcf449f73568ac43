"""The durable job queue: rows handed to workers under leases, resumed when a worker dies."""
