"""`workflows_app.py` is a script for the official worker's own Python >=3.12 venv: it imports
`mistralai.workflows`, which the project's venv does not have, so pytest never collects it."""

collect_ignore = ["workflows_app.py"]
