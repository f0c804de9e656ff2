"""Which tools each configured MCP server offers, known without starting it: the server's ``tools`` list in
the config and the listing cached the last time it ran with the same config
(``$JARVIS_HOME/mcp/<server>.tools.json``).

The plugin's registration hook runs for every ``jarvis`` command, so this module reads the config file with
the standard library only (the config loader checks the ``[mcp]`` table properly when a tool is used).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

__all__ = ["Offer", "cache_file", "config_table", "configured_servers", "fingerprint", "offers", "read_cache",
           "source_of", "write_cache"]


def _home(env: Mapping[str, str]) -> Path:
    # As jarvis_core.config.paths.jarvis_home, which is not imported here: its package pulls in the whole
    # config loader, and this runs for every command.
    home = env.get("JARVIS_HOME", "").strip()
    return Path(home).expanduser() if home else Path.home() / ".jarvis"


def configured_servers(environ: Optional[Mapping[str, str]] = None) -> Dict[str, Dict[str, Any]]:
    """The ``[mcp.servers.<name>]`` tables of the config file, as written (``{}`` when there are none or the
    file does not parse: the config loader reports that, with its line)."""
    env = os.environ if environ is None else environ
    explicit = env.get("JARVIS_CONFIG", "").strip()
    path = Path(explicit).expanduser() if explicit else _home(env) / "config.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return {}
    if "mcp" not in text:  # no [mcp] table: the TOML parser (a few ms to import) is not needed
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except ValueError:
        return {}
    servers = data.get("mcp", {}).get("servers", {}) if isinstance(data.get("mcp"), dict) else {}
    return {str(k): v for k, v in servers.items() if isinstance(v, dict)} if isinstance(servers, dict) else {}


def source_of(table: Mapping[str, Any]) -> str:
    """The server a listing came from, for people reading the cache: its command line or URL."""
    if table.get("url"):
        return str(table["url"])
    return " ".join([str(table.get("command", "")), *map(str, table.get("args", []) or [])])


def fingerprint(table: Mapping[str, Any]) -> str:
    """A digest of what decides which server answers (``command``, ``args``, ``env``, ``cwd``, ``url``): a
    cached listing made with another is not used. A digest, so the cache holds no ``env`` value."""
    import hashlib  # here: registering reads a cache only when there is one

    env = table.get("env") or {}
    identity = {"command": str(table.get("command", "") or ""), "args": [str(a) for a in table.get("args", []) or []],
                "env": {str(k): str(v) for k, v in env.items()} if isinstance(env, Mapping) else str(env),
                "cwd": str(table.get("cwd", "") or ""), "url": str(table.get("url", "") or "")}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()


def config_table(config: Any) -> Dict[str, Any]:
    """What :func:`fingerprint` digests, from a checked ``McpServerConfig``."""
    return {"command": config.command, "args": list(config.args), "env": dict(config.env), "cwd": config.cwd,
            "url": config.url}


def cache_file(server: str, environ: Optional[Mapping[str, str]] = None) -> Path:
    """Where the last listing of ``server``'s tools is kept."""
    return _home(os.environ if environ is None else environ) / "mcp" / f"{server}.tools.json"


def read_cache(server: str, table: Mapping[str, Any]) -> Optional[List[Dict[str, Any]]]:
    """The cached tool listing of ``server`` (``None``: none, or one made with another command line, ``env``,
    ``cwd`` or URL)."""
    try:
        doc = json.loads(cache_file(server).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("config") != fingerprint(table) or not isinstance(doc.get("tools"), list):
        return None
    return [t for t in doc["tools"] if isinstance(t, dict) and isinstance(t.get("name"), str)]


def write_cache(server: str, table: Mapping[str, Any], tools: List[Dict[str, Any]]) -> None:
    """Keep ``server``'s listing for later processes (best effort: an unwritable home only costs a listing)."""
    path = cache_file(server)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"source": source_of(table), "config": fingerprint(table), "tools": tools},
                                  indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


class Offer:
    """One tool a server offers to jarvis: the registry key, the server's own name for it, and what the
    listing says (``None`` fields: not listed yet)."""

    __slots__ = ("annotations", "description", "key", "listed", "remote", "server")

    def __init__(self, server: str, key: str, remote: str, listed: Optional[Dict[str, Any]] = None) -> None:
        self.server, self.key, self.remote, self.listed = server, key, remote, listed
        self.description = None if listed is None else str(listed.get("description") or "")
        self.annotations = None if listed is None else dict(listed.get("annotations") or {})


def offers(server: str, table: Mapping[str, Any], listing: Optional[List[Dict[str, Any]]]) -> List[Offer]:
    """The tools of ``server`` jarvis registers: its listing filtered by the config's ``tools`` (or those names
    alone when it was never listed)."""
    wanted = [str(t) for t in table.get("tools", []) or []]
    prefix = str(table.get("prefix", "") or "")
    if listing is None:
        return [Offer(server, prefix + name, name) for name in wanted]
    return [Offer(server, prefix + t["name"], t["name"], t) for t in listing if not wanted or t["name"] in wanted]
