"""What the engines' HTTP clients share beneath :class:`~jarvis_core.engine.http.HTTPEngine`: one SSL
context per process, server addresses checked and normalised, request bodies as strict JSON, and the typed
error for a transport failure."""

from __future__ import annotations

import functools
import http.cookiejar
import json
import re
import ssl
import urllib.request
import warnings
from typing import Any, Dict, List, Optional, Tuple, Union

import httpx

from jarvis_core.engine.http_errors import timeout_error
from jarvis_core.errors import ConfigError, EngineConnectionError, EngineError, StreamError

__all__ = ["AsyncClient", "Client", "environment_proxy", "json_bytes", "normalize_base_url", "shared_ssl_context",
           "translate_transport_error", "uses_environment_proxy"]

#: What ``httpx.Cookies`` is built from (httpx names this type only in a private module).
CookieSource = Union[httpx.Cookies, http.cookiejar.CookieJar, Dict[str, str], List[Tuple[str, str]], None]


@functools.lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """One verified SSL context for every client of the process.

    httpx builds a new context (loading the CA bundle, ~80 ms) per client otherwise, which made probing N
    engines cost N times that even when the probes run in parallel.
    """
    return httpx.create_ssl_context()


def environment_proxy(url: str) -> Optional[str]:
    """The proxy the environment sends requests to ``url`` through: ``HTTP_PROXY``, ``HTTPS_PROXY`` or
    ``ALL_PROXY`` (any case) for its scheme, unless its host is excluded by ``NO_PROXY``; else ``None``.

    httpx's sync client finds it itself; the engines' async transport is handed it
    (:func:`~jarvis_core.engine.pool.async_transport`), so both reach the server the same way.
    """
    proxies = urllib.request.getproxies()
    if not proxies:
        return None
    target = httpx.URL(url)
    proxy = proxies.get(target.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(f"{target.host}:{target.port}" if target.port else target.host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def uses_environment_proxy(url: str) -> bool:
    """Whether the environment sends requests to ``url`` through a proxy (see :func:`environment_proxy`)."""
    return environment_proxy(url) is not None


class _Cookies(httpx.Cookies):
    """httpx's cookie store, reading cookies only from responses that set some."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class _SetCookieOnly:
    """The ``cookies`` property of a client whose jar looks only at responses with ``Set-Cookie``.

    httpx hands every response to ``client.cookies``, whose jar first rebuilds the request and the headers as
    ``urllib`` and ``email`` objects: a sizeable share of a proxied request's cost in ``jarvis serve``, though
    model servers rarely set a cookie. Overriding the public property (httpx reads and merges cookies through
    it) keeps cookies that are set, and sends them back, as before.
    """

    _set_cookie_jar: _Cookies

    @property
    def cookies(self) -> httpx.Cookies:
        return self._set_cookie_jar

    @cookies.setter
    def cookies(self, cookies: CookieSource) -> None:
        self._set_cookie_jar = _Cookies(cookies)


class Client(_SetCookieOnly, httpx.Client):
    """``httpx.Client`` with the cookie jar of :class:`_SetCookieOnly`."""

    def __init__(self, *, cookies: CookieSource = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cookies = cookies


class AsyncClient(_SetCookieOnly, httpx.AsyncClient):
    """``httpx.AsyncClient`` with the cookie jar of :class:`_SetCookieOnly`."""

    def __init__(self, *, cookies: CookieSource = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cookies = cookies


def normalize_base_url(url: str, *, default_scheme: str = "http", strip_suffix: str = "") -> str:
    """``host:port`` → ``http://host:port``; drop a trailing ``/`` and, if given, a suffix such as ``/v1``.

    :raises ConfigError: the address is not a usable http(s) URL (a user mistake, reported as one).
    """
    given = url
    url = url.strip()
    if "://" not in url:
        url = f"{default_scheme}://{url}"
    url = url.rstrip("/")
    if strip_suffix and url.endswith(strip_suffix):
        url = url[: -len(strip_suffix)].rstrip("/")
    if url.count("[") != url.count("]"):
        raise ConfigError(f"invalid server address {given!r}: unbalanced '[' (an IPv6 address is written "
                          "http://[::1]:8080)", key="host")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"invalid server address {given!r}: {exc}", key="host") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"invalid server address {given!r}: expected http(s)://host[:port]", key="host")
    if parsed.port is not None and not 0 < parsed.port <= 65535:
        raise ConfigError(f"invalid server address {given!r}: port {parsed.port} is not between 1 and 65535",
                          key="host")
    return url


#: A UTF-16 surrogate escape of json.dumps that is not half of a valid pair.
_LONE_SURROGATE = re.compile(r"\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f][0-9a-f]{2})|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}")


def json_bytes(body: Any) -> bytes:
    """A request body as strict JSON: NaN and infinities raise ``ValueError``; a lone surrogate (text that
    was not UTF-8, as the shell passes it on) becomes U+FFFD with a warning, since servers reject it."""
    text = json.dumps(body, allow_nan=False)
    if "\\ud" in text:
        fixed, count = _LONE_SURROGATE.subn(r"\\ufffd", text)
        if count:
            warnings.warn(f"the request held {count} character(s) that are not valid Unicode text (bytes that "
                          "were not UTF-8); each was replaced by U+FFFD", UserWarning, stacklevel=4)
            text = fixed
    return text.encode()


def translate_transport_error(exc: Exception, *, engine_id: str, url: str) -> EngineError:
    """The jarvis error for an httpx transport failure (never includes headers or keys)."""
    if isinstance(exc, httpx.TimeoutException):
        return timeout_error(exc, engine_id=engine_id, url=url)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return StreamError(f"{engine_id}: the connection to {url} broke off: {exc}", engine_id=engine_id)
    return EngineConnectionError(
        f"{engine_id}: cannot reach {url} ({type(exc).__name__}); is the server running? "
        f"Set its address with --host, the config file, or {engine_id.upper().replace('-', '_')}_HOST",
        engine_id=engine_id, url=url,
    )
