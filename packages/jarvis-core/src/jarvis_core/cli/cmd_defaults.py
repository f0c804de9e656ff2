"""``jarvis defaults MODEL [--backend B]``: the backend defaults that apply to a model, and where each came from.

By default a table: one row per field (tool parser, reasoning parser, each sampling value an engine sends
when the request sets nothing, each extra) with its value and its provenance (the rule's pattern and the
distribution that registered it, ``user config``, or ``engine default``), then the rules that matched.
``--json`` prints the document: the resolved fields, ``provenance``, ``matched_rules``, and
``effective_sampling`` (engine defaults included) with ``effective_sources``. User rules come from
``[model_defaults."<pattern>"]`` in the config file; ``--no-user-config`` leaves them out.

``--gguf PATH`` (or a MODEL that is an existing ``.gguf`` file) gives the rules computed by code the model's
file: the llama.cpp hook reads its metadata, so the family rules match what the file says it is (its
``general.name``) and its context length and chat template show as extras.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, Dict, List, Optional

from jarvis_core.commands import add_json_options, cell, format_table, write_result

__all__ = ["add_parser", "collect", "render", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``defaults`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "defaults",
        help="show the backend defaults that apply to a model",
        description="Show the parsers and sampling defaults that apply to MODEL, and where each came from "
        "(a table; --json for scripts).",
    )
    p.add_argument("model", metavar="MODEL", nargs="?", help="model id, e.g. Qwen/Qwen3-8B, qwen3:8b or a .gguf path")
    p.add_argument("--gguf", metavar="PATH", help="a local GGUF file: its own metadata (name, context length, chat "
                   "template) is read by the backend hooks and the family rules match what it says it is; MODEL "
                   "defaults to the path")
    p.add_argument("--backend", "-b", default=None, help="engine key (vllm, ollama, llamacpp, ...); default: unknown")
    p.add_argument("--no-user-config", action="store_true", help="ignore [model_defaults] in the config file")
    add_json_options(p)
    return p


def _user_rules() -> tuple[Any, ...]:
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


def collect(model: str, backend: Optional[str] = None, *, use_config: bool = True,
            gguf: Optional[str] = None) -> Dict[str, Any]:
    """The JSON document ``jarvis defaults`` prints (``gguf``: the model's local file)."""
    from jarvis_core.defaults import ModelAdapter

    rules, path = _user_rules() if use_config else (None, None)
    adapter = ModelAdapter.for_model(model, backend, user_rules=rules, path=gguf)
    out: Dict[str, Any] = adapter.resolved.to_dict()
    out["effective_sampling"] = adapter.sampling({})
    out["effective_sources"] = adapter.sampling_sources({})
    out["user_config"] = str(path) if path else None
    return out


def run(args: argparse.Namespace) -> int:
    """Print the resolved defaults of ``args.model``."""
    from jarvis_core.errors import UsageError

    gguf = getattr(args, "gguf", None)
    if gguf is not None:
        import os

        if not os.path.isfile(gguf):
            raise UsageError(f"--gguf {gguf}: no such file", argument="--gguf")
    model = args.model if args.model is not None else gguf
    if model is None or not model.strip():
        raise UsageError("MODEL is empty: give a model id such as 'qwen3:8b' or 'Qwen/Qwen3-8B' (or --gguf PATH)",
                         argument="MODEL")
    doc = collect(model, args.backend, use_config=not args.no_user_config, gguf=gguf)
    write_result(doc, args, lambda d: render(d, use_config=not args.no_user_config))
    return 0


def _short(text: str, limit: int = 80) -> str:
    """A long value (a chat template) cut for the table; ``--json`` has it whole."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(doc: Dict[str, Any], *, use_config: bool = True) -> str:
    """The ``jarvis defaults`` table for a :func:`collect` document: each field, its value and its source."""
    provenance = doc["provenance"]

    def source(field: str, fallback: str = "no rule") -> str:
        p = provenance.get(field)
        return f"rule {p['pattern']!r} ({p['distribution']})" if p else fallback

    rows: List[List[str]] = [
        ["tool parser", cell(doc["tool_parser"]), source("tool_parser")],
        ["reasoning parser", cell(doc["reasoning_parser"]), source("reasoning_parser")],
    ]
    for name, value in doc["effective_sampling"].items():
        rows.append([name, cell(value), source(name, doc["effective_sources"].get(name, "-"))])
    rows += [[f"extras.{name}", _short(cell(value)), source(f"extras.{name}")] for name, value in doc["extras"].items()]

    normalized = f" (normalized: {doc['normalized_id']})" if doc["normalized_id"] != doc["model"] else ""
    head = format_table(None, [["model", doc["model"] + normalized],
                               ["backend", doc["backend"] or "not given (rules for any backend)"]])
    matched = ", ".join(f"{m['pattern']!r} ({m['distribution']})" for m in doc["matched_rules"]) or "none"
    from jarvis_core.defaults import model_id_candidates

    own = set(model_id_candidates(doc["model"]))
    known_as = [i for i in doc.get("matched_ids", []) if i not in own]  # ids the model's file gave
    if doc["user_config"]:
        user = f"[model_defaults] of {doc['user_config']}"
    else:
        user = "left out (--no-user-config)" if not use_config else "none (no config file)"
    return "\n".join([
        head, "", format_table(["FIELD", "VALUE", "FROM"], rows), "",
        f"rules matched, most specific first: {matched}",
        *([f"also matched as: {', '.join(known_as)}"] if known_as else []),
        f"user rules: {user}",
    ])
