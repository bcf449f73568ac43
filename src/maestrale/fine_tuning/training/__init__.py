"""The trainers: programs run in a subprocess of the worker (`python -m ...`), so that torch lives
only there, a cancel or a lost lease kills the training at once, and the event loop of the worker
is never blocked. They report on stdout, one JSON object a line (`protocol.py`)."""
