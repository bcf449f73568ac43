"""`maestrale serve --workers N`: N server processes on one listening socket, and the hub that
keeps what lives in process memory right across them (limit counters, cache invalidations) and
hosts the heavy local engines once for the machine. See `supervisor` for the picture."""
