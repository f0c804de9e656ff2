"""jarvis-engine-echo: an example jarvis plugin (an engine that repeats the last user message).

Nothing is imported here: jarvis imports :mod:`jarvis_engine_echo.plugin` (the entry point) to list the
plugin, and :mod:`jarvis_engine_echo.engine` only when the ``echo`` engine is used.
"""

__version__ = "0.1.0"
