"""The engines' ``tool_mode`` option: ``native`` sends OpenAI ``tools``; ``json_schema`` sends the tools as a
JSON-schema constrained response instead, for models whose chat template knows no tools (the one
implementation is :mod:`jarvis_core.tools.json_mode`); ``auto`` lets the engine decide (llama.cpp asks the
server's ``/props``).
"""

from __future__ import annotations

__all__ = ["TOOL_MODES"]

#: ``native``: OpenAI ``tools``; ``json_schema``: constrained response; ``auto``: the engine decides.
TOOL_MODES = ("auto", "native", "json_schema")
