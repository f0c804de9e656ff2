"""The core's built-in defaults plugin (entry point ``core-defaults``).

Registers one ``jarvis_backend_defaults`` rule per model family from ``_generated_families.json``, which
``scripts/gen_backend_defaults.py`` generates from LocalAI's tables (never edit it by hand). The file is
read when the registry is built, not at import.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, List

from jarvis_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import DefaultsRegister

DATA_FILE = "_generated_families.json"


def load_rules() -> List[Dict[str, Any]]:
    """The generated rules, in file order.

    Read next to this module (installed wheels unpack package data; ``importlib.resources`` would add
    milliseconds to every ``jarvis`` start-up).
    """
    with open(os.path.join(os.path.dirname(__file__), DATA_FILE), encoding="utf-8") as fh:
        return list(json.load(fh)["rules"])


@hookimpl
def jarvis_backend_defaults(register: DefaultsRegister) -> None:
    for rule in load_rules():
        register(
            rule["pattern"],
            backends=("*",),
            tool_parser=rule.get("tool_parser"),
            reasoning_parser=rule.get("reasoning_parser"),
            sampling=rule.get("sampling"),
        )
