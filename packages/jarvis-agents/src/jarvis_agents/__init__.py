"""jarvis-agents: the agents ``simple``, ``orchestrator`` and ``native_react`` (alias ``react``) and the tools
``calculator``, ``think``, ``file_read``, ``file_write``, ``llm``, ``memory_store``, ``memory_retrieve`` and
``memory_search``.

Importing this package is cheap; the registry imports an agent's or a tool's module only when it is used.
"""

__version__ = "0.2.0"
