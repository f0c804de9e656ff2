"""Whether answers are logged, and where: ``--no-log``, ``$JARVIS_NO_LOG``, ``[log] enabled`` and ``path``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional

from jarvis_core.config.paths import jarvis_home
from jarvis_core.switches import env_flag

if TYPE_CHECKING:
    from jarvis_core.config import JarvisConfig

__all__ = ["LOG_FILE", "NO_LOG_ENV", "default_log_path", "log_path", "logging_enabled"]

#: Environment switch that turns the log off (``1``, ``true``, ``yes``, ``on``).
NO_LOG_ENV = "JARVIS_NO_LOG"
#: The log's file name in the jarvis home.
LOG_FILE = "logs.db"


def default_log_path(environ: Optional[Mapping[str, str]] = None) -> Path:
    """``logs.db`` in the jarvis home (``$JARVIS_HOME``, else ``~/.jarvis``)."""
    return jarvis_home(environ) / LOG_FILE


def log_path(config: Optional[JarvisConfig], environ: Optional[Mapping[str, str]] = None) -> Path:
    """The log file: ``[log] path`` when set, else :func:`default_log_path`."""
    configured = config.log.path if config is not None else None
    return Path(configured).expanduser() if configured else default_log_path(environ)


def logging_enabled(config: Optional[JarvisConfig], *, no_log: bool = False,
                    environ: Optional[Mapping[str, str]] = None) -> bool:
    """True unless ``--no-log`` was given, ``$JARVIS_NO_LOG`` is on, or ``[log] enabled = false``."""
    if no_log or env_flag(NO_LOG_ENV, environ):
        return False
    return config is None or config.log.enabled
