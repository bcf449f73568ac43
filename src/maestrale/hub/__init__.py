"""The hub of `maestrale serve --workers N`: a Unix-socket server in the supervisor that keeps
what lives in process memory right across the N server processes (limit counters, cache
invalidations) and hosts the heavy local engines once for the machine, and the client each server
process calls it with. `processes.supervisor` has the picture."""
