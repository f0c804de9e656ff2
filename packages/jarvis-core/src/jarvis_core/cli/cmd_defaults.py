"""``jarvis defaults MODEL [--backend B]``: the backend defaults that apply to a model, as JSON.

Prints the resolved tool and reasoning parsers, sampling values and extras, the provenance of every field
(rule pattern and the distribution that registered it, or ``user config``), every rule that matched, and
``effective_sampling``: what an engine sends when the request sets nothing (engine defaults included),
with ``effective_sources``. User rules come from ``[model_defaults."<pattern>"]`` in the config file;
``--no-user-config`` leaves them out.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Dict, Optional

__all__ = ["add_parser", "collect", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``defaults`` to the ``jarvis`` parser."""
    p = subparsers.add_parser(
        "defaults",
        help="show the backend defaults that apply to a model",
        description="Show the parsers and sampling defaults that apply to MODEL, and where each came from (JSON).",
    )
    p.add_argument("model", metavar="MODEL", help="model id, e.g. Qwen/Qwen3-8B, qwen3:8b or a .gguf path")
    p.add_argument("--backend", "-b", default=None, help="engine key (vllm, ollama, llamacpp, ...); default: unknown")
    p.add_argument("--no-user-config", action="store_true", help="ignore [model_defaults] in the config file")
    return p


def _user_rules() -> tuple:
    """``(rules, config path)`` from the user's config; a missing config module means no user rules.

    Config errors are not swallowed: a broken config file is reported, never silently ignored.
    """
    try:
        config_module = importlib.import_module("jarvis_core.config")
    except ModuleNotFoundError as exc:
        if exc.name not in ("jarvis_core.config",):
            raise
        return None, None
    loader = getattr(config_module, "load_config", None)
    if loader is None:
        return None, None
    config = loader()
    return getattr(config, "model_defaults", None) or None, getattr(config, "path", None)


def collect(model: str, backend: Optional[str] = None, *, use_config: bool = True) -> Dict[str, Any]:
    """The JSON document ``jarvis defaults`` prints."""
    from jarvis_core.defaults import ModelAdapter

    rules, path = _user_rules() if use_config else (None, None)
    adapter = ModelAdapter.for_model(model, backend, user_rules=rules)
    out = adapter.resolved.to_dict()
    out["effective_sampling"] = adapter.sampling({})
    out["effective_sources"] = adapter.sampling_sources({})
    out["user_config"] = str(path) if path else None
    return out


def run(args: argparse.Namespace) -> int:
    """Print the resolved defaults of ``args.model``."""
    if not args.model.strip():
        from jarvis_core.errors import JarvisError

        raise JarvisError("MODEL is empty: give a model id such as 'qwen3:8b' or 'Qwen/Qwen3-8B'")
    doc = collect(args.model, args.backend, use_config=not args.no_user_config)
    json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0
