"""The core's built-in defaults plugin (being written)."""
