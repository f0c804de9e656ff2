"""The server's front door: the ``Host`` allow-list and bearer-token authentication, as one ASGI layer.

Rules:

* Every HTTP request must name an allowed host in its ``Host`` header, whatever the bind address and
  whether a token is set. A browser tricked by DNS rebinding sends the attacker's name (``evil.example``)
  and is refused with 400 before anything else runs.
* With a token, every path but ``/health`` needs ``Authorization: Bearer <token>``; the comparison is
  constant-time (:func:`hmac.compare_digest` on bytes). A missing or wrong token is a 401.
* A token is required to bind anything but a loopback address (:func:`check_bind`).

Nothing here ever echoes the token, the ``Authorization`` header or any other header back.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any, Awaitable, Callable, FrozenSet, Iterable, Optional

from jarvis_core.errors import ConfigError

__all__ = ["OPEN_PATHS", "SecurityLayer", "allowed_hosts_for", "check_bind", "check_token", "is_loopback"]

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

#: Paths answered without a token (they reveal nothing): liveness probes must not need the secret.
OPEN_PATHS: FrozenSet[str] = frozenset({"/health"})

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_token(token: Optional[str]) -> Optional[bytes]:
    """Validate a token and return it as bytes (``None`` when unset). A token must be printable ASCII
    without spaces, at least 16 characters: it travels in an HTTP header. The error never shows it."""
    if token is None or token == "":
        return None
    if len(token) < 16 or not all(33 <= ord(c) < 127 for c in token):
        raise ConfigError(
            "the server token must be at least 16 printable ASCII characters without spaces "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')",
            key="token",
        )
    return token.encode("ascii")


def check_bind(host: str, token: Optional[bytes]) -> None:
    """Refuse to bind a non-loopback address without a token."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve on {host} without a token: anyone who can reach it could use your models and "
            "agents. Set JARVIS_SERVER_TOKEN (or --token), or bind 127.0.0.1",
            key="host",
        )


def allowed_hosts_for(bind_host: str, extra: Iterable[str] = ()) -> FrozenSet[str]:
    """The ``Host`` names accepted: the loopback names, the bind address when it is a specific one, and
    ``extra`` (``--allow-host``). ``*`` in ``extra`` accepts any name."""
    names = {n.lower() for n in _LOOPBACK_NAMES}
    bind = bind_host.strip().strip("[]").lower()
    if bind not in ("", "0.0.0.0", "::"):
        names.add(bind)
    names.update(e.strip().strip("[]").lower() for e in extra if e.strip())
    return frozenset(names)


def _host_name(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8000
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def _header(scope: Any, name: bytes) -> Optional[bytes]:
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value)
    return None


async def _refuse(send: Any, status: int, message: str, code: str, *, auth: bool = False) -> None:
    body = json.dumps(
        {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if auth:
        headers.append((b"www-authenticate", b'Bearer realm="jarvis"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class SecurityLayer:
    """ASGI middleware applying the ``Host`` allow-list and, when a token is set, bearer authentication."""

    def __init__(self, app: ASGIApp, *, token: Optional[bytes], allowed_hosts: FrozenSet[str],
                 on_refusal: Optional[Callable[[Any, int, str], None]] = None) -> None:
        if token is not None and not isinstance(token, bytes):
            raise TypeError("SecurityLayer needs the token as bytes (see check_token)")
        if not allowed_hosts:
            raise ValueError("SecurityLayer needs at least one allowed host")
        self.app = app
        self._token = token
        self._hosts = allowed_hosts
        self._any_host = "*" in allowed_hosts
        #: ``(scope, status, code)`` for each request refused here (``/metrics`` counts them).
        self._on_refusal = on_refusal

    @property
    def any_host(self) -> bool:
        """Whether the ``Host`` allow-list is off (``*``; only allowed with a token)."""
        return self._any_host

    @property
    def a_host(self) -> str:
        """One allowed host name (for self-checks)."""
        return min(h for h in self._hosts if h != "*") if len(self._hosts - {"*"}) else "localhost"

    @property
    def requires_token(self) -> bool:
        """Whether requests (other than :data:`OPEN_PATHS`) need a bearer token."""
        return self._token is not None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":  # no websocket routes: refuse rather than pass anything through
            await send({"type": "websocket.close", "code": 1008})
            return
        host = _host_name((_header(scope, b"host") or b"").decode("latin-1"))
        if not self._any_host and host not in self._hosts:
            await self._refuse(scope, send, 400, "the Host header names a host this server does not serve "
                               "(add it with --allow-host if it is yours)", "host_not_allowed")
            return
        if self._token is not None and scope.get("path") not in OPEN_PATHS and not self._authorized(scope):
            await self._refuse(scope, send, 401, "missing or invalid bearer token (send 'Authorization: Bearer "
                               "<token>')", "invalid_api_key", auth=True)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Any, send: Any, status: int, message: str, code: str, *, auth: bool = False) -> None:
        if self._on_refusal is not None:
            self._on_refusal(scope, status, code)
        await _refuse(send, status, message, code, auth=auth)

    def _authorized(self, scope: Any) -> bool:
        assert self._token is not None
        value = _header(scope, b"authorization") or b""
        scheme, _, given = value.partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(given.strip(), self._token)

    def __repr__(self) -> str:
        return f"SecurityLayer(token={'set' if self._token else 'none'}, hosts={sorted(self._hosts)})"
