"""On/off switches read from the environment (``JARVIS_DEBUG``, ``JARVIS_STRICT_PLUGINS``, …).

One reading for every switch: ``1``, ``true``, ``yes`` or ``on`` (any case, blanks around ignored) turn it
on; anything else, or the variable unset, leaves it off. Kept free of imports so that the plugin manager and
the CLI can read a switch before anything else loads.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

__all__ = ["ON_WORDS", "env_flag"]

#: The values that turn a switch on.
ON_WORDS = frozenset({"1", "true", "yes", "on"})


def env_flag(name: str, environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when the variable ``name`` (in ``environ``, default ``os.environ``) turns its switch on."""
    env = os.environ if environ is None else environ
    return (env.get(name) or "").strip().lower() in ON_WORDS
