"""``web_fetch``: fetch one web page and return its text, with an SSRF check on every hop.

Every hop (the URL and each redirect) is checked before anything is sent: the scheme must be ``http`` or
``https``, the URL must carry no ``user:password``, and the host must resolve only to public addresses
(:mod:`~jarvis_agents.tools.ssrf`). The request then goes to the address that was checked (``Host`` and,
for https, the TLS server name stay the URL's host, so certificates are still verified against it).
Redirects are followed by hand, at most ``max_redirects`` of them, each hop checked the same way. No proxy
from the environment is used (it would connect on the fetcher's behalf, past the check).

The page comes back as text: HTML with scripts and styles removed and whitespace folded, other text types
as they are, binary types as a one-line note. At most ``max_bytes`` are read and ``max_chars`` returned.

One overall ``deadline`` bounds the whole call: name lookups, connections, every hop, the headers and the
body, and turning the page into text. A server that sends one byte at a time never resets it (a per-read
timeout alone would wait as long as the bytes keep coming). The fetch runs on its own event loop in the
executor's worker thread, so at the deadline it is cancelled and its connection closed, and the thread is
free again before the executor's own timeout: no thread stays behind to count against
``max_abandoned_threads``. Text conversion goes a slice at a time; at the deadline the text so far comes
back, marked as cut.

Options (``[tools.web_fetch]``): ``timeout`` (20 s for each connect or read), ``deadline`` (30 s for the
whole call), ``max_chars`` (20000), ``max_bytes`` (2000000), ``max_redirects`` (5), ``allow_private``
(false), ``allow`` (``["address:port", …]`` allowed although not public).
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from html.parser import HTMLParser
from typing import Any, List, Optional, Sequence, Tuple
from urllib.parse import urljoin

import httpx

from jarvis_agents.tools.ssrf import AddressPolicy, FetchFailedError, FetchRefusedError, parse_allow
from jarvis_core.engine.transport import shared_ssl_context
from jarvis_core.errors import ConfigError
from jarvis_core.tools import ToolPolicy
from jarvis_core.tools.output import cap_output
from jarvis_core.types import ToolSpec

__all__ = ["WebFetchTool", "html_to_text"]

_REDIRECTS = {301, 302, 303, 307, 308}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml", "application/javascript")
#: How much markup the HTML parser is fed between two looks at the deadline.
_PARSE_SLICE = 64 * 1024
#: Seconds the executor waits beyond ``deadline`` (for the cancelled fetch to close and the cut text to go).
_GRACE_S = 5.0


class _TextOfHTML(HTMLParser):
    _SKIP = {"script", "style", "noscript", "template", "svg"}
    _BREAK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "pre", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: List[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in self._BREAK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self.skipping:
            self.skipping -= 1
        elif tag in self._BREAK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(markup: str, deadline: Optional[float] = None) -> str:
    """The readable text of an HTML page: no scripts or styles, one blank line at most between blocks.

    ``deadline`` (a ``time.monotonic()`` value): past it, the text parsed so far is returned, marked as cut.
    """
    parser = _TextOfHTML()
    cut = False
    for start in range(0, len(markup), _PARSE_SLICE):
        if deadline is not None and time.monotonic() > deadline:
            cut = True
            break
        parser.feed(markup[start:start + _PARSE_SLICE])
    if not cut:
        parser.close()
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text + "\n[web_fetch: cut here; the deadline came before the page was turned into text]" if cut else text


def _number(name: str, value: Any, *, minimum: float, whole: bool = True) -> Any:
    ok = isinstance(value, int if whole else (int, float)) and not isinstance(value, bool) and value >= minimum
    if not ok:
        raise ConfigError(f"[tools.web_fetch] {name} must be a {'whole ' if whole else ''}number of at least "
                          f"{minimum:g}, got {value!r}", key=f"tools.web_fetch.{name}")
    return value


class WebFetchTool:
    """``web_fetch(url)`` → the page's text. See the module docs for the checks and the options."""

    #: Replaced per instance (the timeout follows the configured deadline); side effects and confirmation
    #: are the same for every instance, and listings read them here.
    policy = ToolPolicy(side_effects="read", isolation="thread", open_world=True)

    spec = ToolSpec(
        name="web_fetch",
        description="Fetch a public web page (http or https) and return its text.",
        parameters={
            "type": "object",
            "properties": {"url": {"type": "string", "description": "the full URL", "maxLength": 2048}},
            "required": ["url"],
            "additionalProperties": False,
        },
    )

    def __init__(self, timeout: float = 20.0, max_chars: int = 20_000, max_bytes: int = 2_000_000,
                 max_redirects: int = 5, allow_private: bool = False, allow: Sequence[str] = (),
                 deadline: float = 30.0) -> None:
        self.timeout = float(_number("timeout", timeout, minimum=0.1, whole=False))
        self.deadline = float(_number("deadline", deadline, minimum=0.1, whole=False))
        self.max_chars = _number("max_chars", max_chars, minimum=100)
        self.max_bytes = _number("max_bytes", max_bytes, minimum=1)
        self.max_redirects = _number("max_redirects", max_redirects, minimum=0)
        if not isinstance(allow_private, bool):
            raise ConfigError(f"[tools.web_fetch] allow_private must be true or false, got {allow_private!r}",
                              key="tools.web_fetch.allow_private")
        if isinstance(allow, str):
            raise ConfigError("[tools.web_fetch] allow must be a list of 'address:port' strings",
                              key="tools.web_fetch.allow")
        self.addresses = AddressPolicy(allow_private, parse_allow(allow))
        # per instance: the call ends itself at its deadline, so the executor's timeout (a little later) never
        # has to abandon the thread
        self.policy = ToolPolicy(timeout=self.deadline + _GRACE_S, max_output_chars=self.max_chars + 200,
                                 side_effects="read", isolation="thread", open_world=True)

    def __repr__(self) -> str:
        return f"WebFetchTool(max_redirects={self.max_redirects}, addresses={self.addresses!r})"

    def run(self, url: str) -> str:
        """Fetch ``url`` (following checked redirects) and return ``URL:``, ``Status:`` and the text, all
        within ``deadline`` seconds. Runs its own event loop: call it from a thread that has none running
        (the executor's worker thread)."""
        ends = time.monotonic() + self.deadline
        loop = asyncio.new_event_loop()
        try:
            target, response, body = loop.run_until_complete(self._fetch_by(url, ends))
        finally:
            loop.close()  # does not wait for a name lookup still running in the loop's executor
        return self._render(str(target), response, body, ends)

    async def _fetch_by(self, url: str, ends: float) -> Tuple[httpx.URL, httpx.Response, bytes]:
        try:
            return await asyncio.wait_for(self._fetch(url), max(0.0, ends - time.monotonic()))
        except asyncio.TimeoutError:
            raise FetchFailedError(f"{url} did not arrive within the deadline of {self.deadline:g}s "
                                   "(web_fetch's deadline option)") from None

    async def _fetch(self, url: str) -> Tuple[httpx.URL, httpx.Response, bytes]:
        current = url.strip()
        # the process's one SSL context: building one per client loads the CA bundle again (100-300 ms of CPU)
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False, trust_env=False,
                                     verify=shared_ssl_context()) as client:
            for _hop in range(self.max_redirects + 1):
                target = self._target(current)
                response = await self._send(client, target)
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        current = urljoin(str(target), location)
                        continue
                    body = await self._read(response)
                finally:
                    await response.aclose()
                return target, response, body
        raise FetchRefusedError(f"more than {self.max_redirects} redirects, starting at {url}")

    # -- steps --------------------------------------------------------------------------------------
    def _target(self, url: str) -> httpx.URL:
        try:
            target = httpx.URL(url)
        except (httpx.InvalidURL, ValueError) as exc:
            raise FetchRefusedError(f"not a valid URL: {url!r} ({exc})") from None
        if target.scheme not in _DEFAULT_PORTS or not target.host:
            raise FetchRefusedError(f"only http and https URLs with a host are fetched, got {url!r}")
        if target.userinfo:
            raise FetchRefusedError("URLs with a user name or password are not fetched")
        return target

    async def _send(self, client: httpx.AsyncClient, target: httpx.URL) -> httpx.Response:
        port = target.port or _DEFAULT_PORTS[target.scheme]
        # the lookup blocks; in the loop's executor, so the deadline can give up on it
        address = await asyncio.get_running_loop().run_in_executor(None, self.addresses.check, target.host, port)
        pinned = target.copy_with(host=str(address))
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        request = client.build_request("GET", pinned, extensions=extensions, headers={
            "Host": target.netloc.decode("ascii"), "User-Agent": "jarvis-web-fetch/1",
            "Accept": "text/html, text/plain;q=0.9, application/json;q=0.9, */*;q=0.1",
        })
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise FetchFailedError(f"could not fetch {target}: {type(exc).__name__}: {exc}") from None
        return response

    async def _read(self, response: httpx.Response) -> bytes:
        body = bytearray()
        try:
            async for chunk in response.aiter_bytes():
                body += chunk[: self.max_bytes - len(body)]
                if len(body) >= self.max_bytes:
                    break
        except httpx.HTTPError as exc:
            raise FetchFailedError(f"the page stopped arriving: {type(exc).__name__}: {exc}") from None
        return bytes(body)

    def _render(self, url: str, response: httpx.Response, body: bytes, ends: float) -> str:
        content_type, charset = _content_type(response.headers.get("content-type", ""))
        if content_type.startswith(_TEXT_TYPES) or not content_type:
            text = body.decode(charset or "utf-8", "replace")
            if "html" in content_type or (not content_type and text.lstrip()[:1] == "<"):
                text = html_to_text(text, ends)
        else:
            text = f"[{content_type} content, {len(body)} bytes: not shown]"
        if response.status_code >= 400:
            raise FetchFailedError(f"HTTP {response.status_code} from {url}: {html.unescape(text)[:500]}")
        capped, _ = cap_output(text, self.max_chars)
        return f"URL: {url}\nStatus: {response.status_code}\n\n{capped}"


def _content_type(header: str) -> Tuple[str, Optional[str]]:
    kind, _, params = header.partition(";")
    match = re.search(r"charset=\"?([\w\-.:]+)", params, re.I)
    charset = match.group(1) if match else None
    if charset:
        try:
            "".encode(charset)
        except LookupError:
            charset = None
    return kind.strip().lower(), charset
