"""Plugin module (being written)."""
