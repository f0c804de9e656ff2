"""What a tool is built with: one typed, frozen :class:`ToolContext` instead of objects matched by name.

A tool asks for it by declaring a ``context`` parameter (``def __init__(self, *, context: ToolContext)``);
:func:`~jarvis_core.tools.create_tool` then passes the engine and model of the request the tool is built
for, the jarvis home and the event bus, as openai-agents' ``RunContextWrapper`` and pydantic-ai's
``RunContext`` hand a tool its dependencies. A tool that names ``engine``, ``model``, ``home`` or ``bus``
one by one still gets them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import attrs

if TYPE_CHECKING:
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_core.events import EventBus

__all__ = ["ToolContext"]


@attrs.frozen
class ToolContext:
    """The runtime a tool is built into. Every field may be ``None``: a tool built outside a request (a test,
    ``jarvis serve`` listing its tools) gets what is known."""

    #: The engine the request runs on (for tools that ask a model, such as ``llm``).
    engine: Optional[InferenceEngine] = None
    #: The model the request uses on that engine.
    model: Optional[str] = None
    #: The jarvis home directory (``$JARVIS_HOME``, else ``~/.jarvis``): where tools keep their files.
    home: Optional[Path] = None
    #: The event bus the request publishes to.
    bus: Optional[EventBus] = None
