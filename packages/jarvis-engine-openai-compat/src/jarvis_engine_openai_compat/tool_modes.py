"""The engines' ``tool_mode`` option: ``native`` sends OpenAI ``tools``; ``json_schema`` sends the tools as a
JSON-schema constrained response instead, for models whose chat template knows no tools (the one
implementation is :mod:`jarvis_core.tools.json_mode`); ``auto`` lets the engine decide (llama.cpp asks the
server's ``/props``).
"""

from __future__ import annotations

from typing import Sequence

from jarvis_core.errors import InvalidOptionError

__all__ = ["TOOL_MODES", "ConflictingOptionError"]

#: ``native``: OpenAI ``tools``; ``json_schema``: constrained response; ``auto``: the engine decides.
TOOL_MODES = ("auto", "native", "json_schema")


class ConflictingOptionError(InvalidOptionError):
    """Two options that cannot be used together (e.g. ``response_format`` in ``json_schema`` tool mode)."""

    def __init__(self, engine_id: str, names: Sequence[str], message: str) -> None:
        self.engine_id = engine_id
        self.names = tuple(names)
        self.allowed = ()
        Exception.__init__(self, f"{engine_id}: {message}")
