"""A Maestrale cluster on one machine (deploy/local-cluster) and the fault bench run against it."""
