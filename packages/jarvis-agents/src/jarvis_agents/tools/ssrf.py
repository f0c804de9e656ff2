"""Which network addresses a fetch may connect to (the SSRF check of ``web_fetch``).

A host is resolved once; the fetch then connects to the address that was checked (no second lookup that a
DNS rebinding could answer differently). Refused, unless allowed: every address that is not globally
routable: loopback, private ranges, link-local (``169.254.0.0/16``, the cloud metadata services), carrier
NAT, multicast, reserved and unspecified addresses, and such IPv4 addresses mapped into IPv6 or carried in a
6to4 address. A host whose name resolves to several addresses is refused when any of them is refused.

``allow_private=True`` lifts the check everywhere. ``allow`` lists exact ``address:port`` pairs that may be
fetched although they are not public (one intranet service, or a test server); any other hop, a redirect
included, is checked as usual.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import FrozenSet, Iterable, List, Tuple, Union

import attrs

from jarvis_core.errors import ConfigError, JarvisError

__all__ = ["AddressPolicy", "FetchError", "FetchFailedError", "FetchRefusedError", "IPAddress", "parse_allow", "resolve"]

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


class FetchError(JarvisError):
    """Base of the errors of ``web_fetch`` (a tool error: the model reads the message)."""


class FetchRefusedError(FetchError):
    """A URL was not fetched: its scheme, its form, or an address it resolves to is not allowed."""


class FetchFailedError(FetchError):
    """The fetch was allowed but failed: the name did not resolve, the connection failed, an HTTP error."""


def _plain(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _kind(ip: IPAddress) -> str:
    """Why ``ip`` is not public ("" when it is)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.sixtofour is not None:
        inner = _kind(ip.sixtofour)  # 2002:7f00:1:: is 127.0.0.1 to a host that routes 6to4
        if inner:
            return f"{inner} (inside 6to4)"
    for attr, name in (("is_loopback", "loopback"), ("is_link_local", "link-local"), ("is_multicast", "multicast"),
                       ("is_unspecified", "unspecified"), ("is_private", "private"), ("is_reserved", "reserved")):
        if getattr(ip, attr):
            return name
    return "" if ip.is_global else "not globally routable"


def parse_allow(entries: Iterable[str]) -> FrozenSet[Tuple[IPAddress, int]]:
    """``["127.0.0.1:8080", "[::1]:9000"]`` as ``(address, port)`` pairs; a bad entry is a :class:`ConfigError`."""
    out = set()
    for entry in entries:
        text = str(entry).strip()
        host, sep, port = text.rpartition(":")
        try:
            if not sep or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(text)
            out.add((_plain(ipaddress.ip_address(host.strip("[]"))), int(port)))
        except ValueError:
            raise ConfigError(f"web_fetch allow entries are 'address:port' with an IP address, got {text!r}",
                              key="tools.web_fetch.allow") from None
    return frozenset(out)


@attrs.frozen
class AddressPolicy:
    """``check(host, port)`` resolves ``host`` and returns the address to connect to, or raises
    :class:`FetchRefusedError` naming the host, the address and why."""

    allow_private: bool = False
    allow: FrozenSet[Tuple[IPAddress, int]] = frozenset()

    def check(self, host: str, port: int) -> IPAddress:
        addresses = resolve(host, port)
        for ip in addresses:
            kind = _kind(ip)
            if kind and not self.allow_private and (ip, port) not in self.allow:
                shown = host if host == str(ip) else f"{host} ({ip})"
                raise FetchRefusedError(f"refused to connect to {shown} port {port}: a {kind} address; only public "
                                        "addresses are fetched")
        return addresses[0]


def resolve(host: str, port: int) -> List[IPAddress]:
    """Every address ``host`` resolves to (an IP literal is itself)."""
    try:
        return [_plain(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchFailedError(f"cannot resolve {host!r}: {exc}") from None
    found: List[IPAddress] = []
    for info in infos:
        ip = _plain(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]))
        if ip not in found:
            found.append(ip)
    if not found:
        raise FetchFailedError(f"{host!r} resolves to no address")
    return found
