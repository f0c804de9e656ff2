"""Where the Ollama server is: the default, ``OLLAMA_HOST`` and every form Ollama itself accepts.

Ollama reads ``OLLAMA_HOST`` both as the address the server *binds* and the address its CLI *connects*
to, so users set it to forms such as ``0.0.0.0:11434``, ``myhost``, ``:11434`` or
``https://ollama.example.com/prefix``. :func:`resolve_host` turns any of them into a base URL to connect to,
following Ollama's own parsing:

* no scheme → ``http``; a bare host gets port ``11434``;
* with a scheme and no port → the scheme's port (``http`` 80, ``https`` 443), as Ollama does;
* ``0.0.0.0`` / ``::`` (bind-to-everything addresses) and an empty host → connect to ``127.0.0.1`` /
  ``[::1]``: a server bound to every interface is reachable on loopback, and connecting *to* 0.0.0.0 fails
  on some systems (Windows);
* a path is kept (Ollama behind a reverse proxy under a prefix); surrounding quotes and spaces are dropped;
* a port that is not a number in 0-65535 is a :class:`~jarvis_core.errors.ConfigError` (Ollama only warns
  and silently uses the default port; we refuse to guess).
"""

from __future__ import annotations

import ipaddress
import os
from typing import Mapping, Optional

from jarvis_core.errors import ConfigError

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ENV_VAR", "host_from_environment", "resolve_host"]

DEFAULT_PORT = 11434
DEFAULT_HOST = f"http://localhost:{DEFAULT_PORT}"
#: The environment variable Ollama (and we) read.
ENV_VAR = "OLLAMA_HOST"

_SCHEME_PORTS = {"http": 80, "https": 443}
_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def _split_host_port(hostport: str, source: str) -> tuple[str, Optional[str]]:
    """Split ``host[:port]`` / ``[v6]:port`` / bare IPv6; the port is ``None`` when absent."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise ConfigError(f"{source}: unbalanced '[' in {hostport!r}", key=source)
        host, rest = hostport[1:end], hostport[end + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise ConfigError(f"{source}: unexpected text after ']' in {hostport!r}", key=source)
        return host, rest[1:]
    if hostport.count(":") > 1:  # a bare IPv6 address such as ::1 or ::
        return hostport, None
    host, sep, port = hostport.partition(":")
    return host, (port if sep else None)


def resolve_host(value: Optional[str], *, source: str = "host") -> str:
    """The base URL (``scheme://host:port[/path]``) to connect to for an Ollama host setting.

    ``None`` or an empty value gives :data:`DEFAULT_HOST`. ``source`` names the setting in errors
    (``"host"``, ``"OLLAMA_HOST"``).
    """
    text = (value or "").strip().strip("\"'").strip()
    if not text:
        return DEFAULT_HOST
    scheme, sep, rest = text.partition("://")
    if sep:
        scheme = scheme.lower()
        if scheme not in _SCHEME_PORTS:
            raise ConfigError(f"{source}: unsupported scheme {scheme!r} in {value!r}; use http:// or https://", key=source)
        default_port = _SCHEME_PORTS[scheme]
    else:
        scheme, rest, default_port = "http", text, DEFAULT_PORT
    hostport, slash, path = rest.partition("/")
    host, port_text = _split_host_port(hostport, source)
    if port_text is None or port_text == "":
        port = default_port
    else:
        if not port_text.isdigit() or int(port_text) > 65535:
            raise ConfigError(
                f"{source}: invalid port {port_text!r} in {value!r}; expected a number from 0 to 65535", key=source
            )
        port = int(port_text)
    host = _UNSPECIFIED.get(host, host)
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass  # a host name
    path = ("/" + path.rstrip("/")) if slash and path.strip("/") else ""
    return f"{scheme}://{host}:{port}{path}"


def host_from_environment(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The base URL from ``OLLAMA_HOST`` when it is set and not empty, else ``None``."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_VAR, "")
    if not raw.strip():
        return None
    return resolve_host(raw, source=ENV_VAR)
