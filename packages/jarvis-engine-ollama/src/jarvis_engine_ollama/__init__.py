"""jarvis-engine-ollama: the ``ollama`` engine for jarvis (Ollama's native HTTP API).

Importing this package is cheap; the engine lives in :mod:`jarvis_engine_ollama.engine` and is loaded
by the registry only when used.
"""

__version__ = "0.2.0"
