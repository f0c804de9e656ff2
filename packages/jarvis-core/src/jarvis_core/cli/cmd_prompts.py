"""``jarvis prompts``: the installed prompt providers.

::

    jarvis prompts list                         providers, their family, size and mode (table; --json)
    jarvis prompts show NAME                    one provider's capabilities and request shape
    jarvis prompts render NAME [--context F] [--tools F] [--commands F] [--timezone TZ]
                                                the system prompt it builds for that context and those tools
    jarvis prompts training-data NAME --in examples.jsonl [--out F]
                                                chat-format training examples (JSON Lines)

Names are matched in any letter case; an unknown name lists the installed ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any, Dict, List

from jarvis_core.commands import format_table

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``prompts`` to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "prompts", help="list, show and render prompt providers; write training data",
        description="The installed prompt providers (registered through jarvis_register_prompt_providers).",
    )
    sub = p.add_subparsers(dest="prompts_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the installed providers (table; --json)")
    ls.add_argument("--json", action="store_true", help="print JSON")
    show = sub.add_parser("show", help="one provider's capabilities and request shape")
    show.add_argument("name", metavar="NAME")
    show.add_argument("--json", action="store_true", help="print JSON")
    render = sub.add_parser("render", help="print the system prompt a provider builds")
    render.add_argument("name", metavar="NAME")
    render.add_argument("--context", metavar="FILE", help="node context JSON object (room, user, voice_mode, …)")
    render.add_argument("--tools", metavar="FILE", help="JSON array of OpenAI function schemas")
    render.add_argument("--commands", metavar="FILE", help="JSON array of {command_name, allow_direct_answer}")
    render.add_argument("--timezone", metavar="TZ")
    render.add_argument("--json", action="store_true", help="print the prompt and the request shape as JSON")
    train = sub.add_parser("training-data", help="chat-format training examples from (command, tool call) pairs")
    train.add_argument("name", metavar="NAME")
    train.add_argument("--in", dest="input", metavar="FILE", required=True,
                       help='JSON Lines: {"voice_command": "...", "tool_call": {"name": ..., "arguments": {...}}}')
    train.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    return p


def _describe(reg: Any) -> Dict[str, Any]:
    from jarvis_core.prompts import get_provider

    provider = get_provider(reg.key)
    return {
        "name": provider.name,
        "distribution": reg.distribution,
        "version": reg.version,
        "target": reg.target_name(),
        "description": reg.description,
        "capabilities": provider.get_capabilities(),
        "mode": "native" if provider.supports_native_tools else "text",
        "user_message_suffix": provider.user_message_suffix,
        "response_format": None if provider.supports_native_tools else provider.get_response_format(),
        "lazy_tool_loading": provider.lazy_tool_loading,
    }


def _list(args: argparse.Namespace) -> int:
    from jarvis_core.errors import JarvisError
    from jarvis_core.prompts import provider_registrations

    docs: List[Dict[str, Any]] = []
    broken: List[Dict[str, Any]] = []
    registrations = provider_registrations()
    for reg in registrations:
        try:
            docs.append(_describe(reg))
        except Exception as exc:  # one broken provider must not hide the others; it is listed as broken
            error = exc if isinstance(exc, JarvisError) else reg.error("failed to describe itself", exc)
            warnings.warn(str(error), RuntimeWarning, stacklevel=1)
            broken.append({"name": reg.key, "distribution": reg.distribution, "version": reg.version,
                           "target": reg.target_name(), "broken": True, "error": str(error)})
    if args.json:
        json.dump(docs + broken, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not registrations:
        print("no prompt providers installed (e.g. pip install jarvis-prompts-qwen)")
        return 0
    rows = [[d["name"], d["capabilities"].get("model_family", ""), d["capabilities"].get("size_tier", ""),
             d["capabilities"].get("training_tier", ""), d["mode"], d["user_message_suffix"] or "-",
             d["distribution"]] for d in docs]
    out = [format_table(["NAME", "FAMILY", "SIZE", "TRAINING", "MODE", "SUFFIX", "DISTRIBUTION"], rows)] if rows else []
    if broken:
        out += ["" if rows else "no working prompt provider", f"broken, not usable ({len(broken)}):",
                format_table(["  NAME", "DISTRIBUTION", "VERSION"], [["  " + b["name"], b["distribution"], b["version"]]
                                                               for b in broken])]
    print("\n".join(out))
    return 0


def _show(args: argparse.Namespace) -> int:
    from jarvis_core.plugins.registry import get_registry

    doc = _describe(get_registry().get("prompt_provider", args.name))
    if args.json:
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    print(f"{doc['name']}  ({doc['distribution']} {doc['version']}, {doc['target']})")
    if doc["description"]:
        print(f"  {doc['description']}")
    print(f"  mode: {doc['mode']}; response format: {json.dumps(doc['response_format'])}; "
          f"user message suffix: {doc['user_message_suffix']!r}")
    for key, value in doc["capabilities"].items():
        print(f"  {key}: {json.dumps(value)}")
    return 0


def _render(args: argparse.Namespace) -> int:
    from jarvis_core.cli.prompt_files import read_json_file
    from jarvis_core.prompts import PromptSession, get_provider

    provider = get_provider(args.name)
    context = read_json_file(args.context, "--context", want=dict) if args.context else None
    tools = read_json_file(args.tools, "--tools", want=list) if args.tools else []
    commands = read_json_file(args.commands, "--commands", want=list) if args.commands else None
    session = PromptSession(provider, tools, context, args.timezone, commands)
    if args.json:
        doc = {**session.describe(), "system_prompt": session.system_prompt, "request": session.request_options()}
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    sys.stdout.write(session.system_prompt.rstrip("\n") + "\n")
    return 0


def _training_data(args: argparse.Namespace) -> int:
    from jarvis_core.cli import output
    from jarvis_core.errors import JarvisError
    from jarvis_core.prompts import get_provider, training_examples

    provider = get_provider(args.name)
    try:
        with open(args.input, encoding="utf-8") as fh:
            examples = list(training_examples(provider, fh, source=args.input))
    except OSError as exc:
        raise JarvisError(f"--in {args.input}: cannot read it ({exc.strerror or exc})") from None
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    output.announce(f"{len(examples)} training example(s) for {provider.name}" + (f" written to {args.out}" if args.out else ""))
    return 0


def run(args: argparse.Namespace) -> int:
    """Run one ``jarvis prompts`` action."""
    actions = {"list": _list, "show": _show, "render": _render, "training-data": _training_data}
    return actions[args.prompts_command](args)
