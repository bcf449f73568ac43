"""Projects and their evaluations v2."""
