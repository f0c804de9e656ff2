"""The ``[engine.echo]`` config table. Field names are :class:`~jarvis_engine_echo.engine.EchoEngine`
constructor arguments, so the core can pass the table straight to ``create_engine("echo", **table)``."""

from __future__ import annotations

import attrs


@attrs.frozen
class EchoConfig:
    """``[engine.echo]``: ``prefix`` is put before every answer."""

    prefix: str = ""
