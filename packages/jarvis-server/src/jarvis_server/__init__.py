"""jarvis-server: ``jarvis serve``, an OpenAI-compatible HTTP server over any jarvis engine.

:func:`jarvis_server.app.create_app` builds the Starlette application; ``jarvis serve`` (registered through
the ``jarvis_register_commands`` hook, see :mod:`jarvis_server.plugin`) runs it under uvicorn.
"""

__version__ = "0.2.0"
