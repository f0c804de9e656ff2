"""The core's built-in parsers plugin (being written)."""
