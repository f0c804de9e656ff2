"""Where the config file lives: ``$JARVIS_CONFIG``, else ``$JARVIS_HOME/config.toml``, else ``~/.jarvis``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional

__all__ = ["CONFIG_ENV", "HOME_ENV", "config_path", "is_explicit", "jarvis_home"]

#: Environment variable naming the config file itself.
CONFIG_ENV = "JARVIS_CONFIG"
#: Environment variable naming jarvis' home directory (holds ``config.toml``).
HOME_ENV = "JARVIS_HOME"


def jarvis_home(environ: Optional[Mapping[str, str]] = None) -> Path:
    """jarvis' home directory: ``$JARVIS_HOME``, else ``~/.jarvis``."""
    env = os.environ if environ is None else environ
    home = env.get(HOME_ENV, "").strip()
    return Path(home).expanduser() if home else Path.home() / ".jarvis"


def config_path(environ: Optional[Mapping[str, str]] = None) -> Path:
    """The config file jarvis reads: ``$JARVIS_CONFIG``, else ``config.toml`` in :func:`jarvis_home`.

    The file need not exist; a missing default file means "built-in defaults".
    """
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return jarvis_home(env) / "config.toml"


def is_explicit(environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when ``$JARVIS_CONFIG`` names the file, so a missing file is an error rather than defaults."""
    env = os.environ if environ is None else environ
    return bool(env.get(CONFIG_ENV, "").strip())
