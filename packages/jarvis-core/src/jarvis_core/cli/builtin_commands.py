"""The built-in ``jarvis`` commands: name -> (module, one-line summary).

A module of its own that imports nothing of jarvis, because the registry reads it to keep plugins off these names
(``Registry.builtin_clashes``) and building the registry must not import the command line's parser.
"""

from typing import Dict, Tuple

__all__ = ["COMMANDS"]

#: command -> (module, one-line summary). Modules are imported only when their command runs.
COMMANDS: Dict[str, Tuple[str, str]] = {
    "ask": ("jarvis_core.cli.cmd_ask", "ask one question; the answer streams to stdout"),
    "chat": ("jarvis_core.cli.cmd_chat", "answer questions read from stdin, one per line, with one engine"),
    "plugins": ("jarvis_core.cli.cmd_plugins", "list installed plugins and what they registered (table; --json)"),
    "engines": ("jarvis_core.cli.cmd_engines", "list configured engines and their health (table; --json)"),
    "models": ("jarvis_core.cli.cmd_models", "list the models each reachable engine offers (table; --json)"),
    "hardware": ("jarvis_core.cli.cmd_hardware", "detect CPU, RAM and GPUs; recommend an engine (--json)"),
    "config": ("jarvis_core.cli.cmd_config", "show, locate or create the config file"),
    "defaults": ("jarvis_core.cli.cmd_defaults", "show the backend defaults that apply to a model (--json)"),
    "agents": ("jarvis_core.cli.cmd_agents", "list the installed agents (table; --json)"),
    "tools": ("jarvis_core.cli.cmd_tools", "list the installed tools (table; --json)"),
    "prompts": ("jarvis_core.cli.cmd_prompts", "list, show and render prompt providers; write training data"),
    "logs": ("jarvis_core.cli.cmd_logs", "list, show and search the conversation log (--json)"),
    "aliases": ("jarvis_core.cli.cmd_aliases", "list, set and remove model aliases ([aliases] in the config)"),
    "embed": ("jarvis_core.cli.cmd_embed", "print the embeddings of texts (arguments or stdin lines; --json)"),
}
