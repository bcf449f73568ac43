"""The documents of a library: upload, list, read, update, delete, their processing state,
their text, signed links to their content and reprocessing."""
