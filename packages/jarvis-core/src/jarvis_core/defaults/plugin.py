"""The core's built-in defaults plugin (entry point ``core-defaults``).

Registers one ``jarvis_backend_defaults`` rule per model family from ``_generated_families.json``, which
``scripts/gen_backend_defaults.py`` generates from LocalAI's tables (never edit it by hand). The file is
read when the registry is built, not at import.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Dict, List

from jarvis_core.hookspecs import hookimpl

DATA_FILE = "_generated_families.json"


def load_rules() -> List[Dict[str, Any]]:
    """The generated rules, in file order."""
    text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    return list(json.loads(text)["rules"])


@hookimpl
def jarvis_backend_defaults(register):
    for rule in load_rules():
        register(
            rule["pattern"],
            backends=("*",),
            tool_parser=rule.get("tool_parser"),
            reasoning_parser=rule.get("reasoning_parser"),
            sampling=rule.get("sampling"),
        )
