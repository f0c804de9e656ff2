"""The search engines ``web_search`` can ask: SearXNG's JSON API, Brave Search, Tavily and DuckDuckGo's HTML
endpoint. Each turns a query into :class:`SearchHit` values from the service's documented response.

A backend is any object with ``search(client, query, max_results) -> list[SearchHit]`` built from the
``[tools.web_search]`` options (``url``, ``api_key``); a plugin ships its own and names it in the config as
``backend = "package.module:Backend"``.
"""

from __future__ import annotations

import html.parser
import urllib.parse
from typing import Any, Dict, List, Optional, Protocol

import attrs
import httpx

from jarvis_core.errors import ConfigError

__all__ = ["BACKENDS", "Brave", "DuckDuckGo", "SearchBackend", "SearchHit", "SearXNG", "Tavily"]


@attrs.frozen
class SearchHit:
    """One search result: a title, its URL and a snippet of the page."""

    title: str
    url: str
    snippet: str = ""


class SearchBackend(Protocol):
    """What ``web_search`` needs from a backend."""

    def search(self, client: Any, query: str, max_results: int) -> List[SearchHit]:
        """Up to ``max_results`` hits for ``query``; raise on a failed request."""
        ...  # pragma: no cover


def _json(response: httpx.Response, service: str) -> Any:
    if response.status_code >= 400:
        raise RuntimeError(f"{service} answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise RuntimeError(f"{service} did not answer JSON") from None


def _hits(items: Any, title: str, url: str, snippet: str, max_results: int) -> List[SearchHit]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get(url), str):
            out.append(SearchHit(str(item.get(title) or ""), item[url], str(item.get(snippet) or "")))
    return out[:max_results]


def _needs_key(name: str, api_key: str) -> str:
    if not api_key:
        raise ConfigError(f"the {name} search backend needs an API key; set it in the config file:\n"
                          f'[tools.web_search]\nbackend = "{name}"\napi_key = "..."', key="tools.web_search.api_key")
    return api_key


class SearXNG:
    """A SearXNG instance's JSON API (``GET /search?q=…&format=json``; the instance must allow ``json``)."""

    def __init__(self, url: str = "", api_key: str = "") -> None:
        if not url:
            raise ConfigError('the searxng search backend needs the instance\'s address; set it in the config file:\n'
                              '[tools.web_search]\nbackend = "searxng"\nurl = "http://localhost:8888"',
                              key="tools.web_search.url")
        self.url = url.rstrip("/") + "/search"

    def search(self, client: Any, query: str, max_results: int) -> List[SearchHit]:
        doc = _json(client.get(self.url, params={"q": query, "format": "json"}), "SearXNG")
        return _hits(doc.get("results") if isinstance(doc, dict) else None, "title", "url", "content", max_results)


class Brave:
    """Brave Search's web search API (``X-Subscription-Token``)."""

    def __init__(self, url: str = "", api_key: str = "") -> None:
        self.url = url or "https://api.search.brave.com/res/v1/web/search"
        self._key = _needs_key("brave", api_key)

    def search(self, client: Any, query: str, max_results: int) -> List[SearchHit]:
        response = client.get(self.url, params={"q": query, "count": max_results},
                              headers={"Accept": "application/json", "X-Subscription-Token": self._key})
        doc = _json(response, "Brave Search")
        web = doc.get("web") if isinstance(doc, dict) else None
        return _hits(web.get("results") if isinstance(web, dict) else None, "title", "url", "description", max_results)


class Tavily:
    """Tavily's search API (``POST /search``, bearer key)."""

    def __init__(self, url: str = "", api_key: str = "") -> None:
        self.url = url or "https://api.tavily.com/search"
        self._key = _needs_key("tavily", api_key)

    def search(self, client: Any, query: str, max_results: int) -> List[SearchHit]:
        response = client.post(self.url, json={"query": query, "max_results": max_results},
                               headers={"Authorization": f"Bearer {self._key}"})
        doc = _json(response, "Tavily")
        return _hits(doc.get("results") if isinstance(doc, dict) else None, "title", "url", "content", max_results)


class _DuckDuckGoPage(html.parser.HTMLParser):
    """The results of DuckDuckGo's HTML page: ``a.result__a`` (title, link) and ``.result__snippet``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hits: List[Dict[str, str]] = []
        self._field: Optional[str] = None

    def handle_starttag(self, tag: str, attrs_: List[Any]) -> None:
        attributes = dict(attrs_)
        classes = (attributes.get("class") or "").split()
        if tag == "a" and "result__a" in classes:
            self.hits.append({"title": "", "url": _unwrap(attributes.get("href") or ""), "snippet": ""})
            self._field = "title"
        elif "result__snippet" in classes and self.hits:
            self._field = "snippet"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("a", "div", "td"):
            self._field = None

    def handle_data(self, data: str) -> None:
        if self._field and self.hits:
            self.hits[-1][self._field] += data


def _unwrap(href: str) -> str:
    """DuckDuckGo links through ``//duckduckgo.com/l/?uddg=<the url>``: the result's own URL."""
    parsed = urllib.parse.urlparse(href)
    target = urllib.parse.parse_qs(parsed.query).get("uddg")
    return target[0] if target else href


class DuckDuckGo:
    """DuckDuckGo's HTML endpoint (no key; the page's markup is parsed)."""

    def __init__(self, url: str = "", api_key: str = "") -> None:
        self.url = url or "https://html.duckduckgo.com/html/"

    def search(self, client: Any, query: str, max_results: int) -> List[SearchHit]:
        response = client.post(self.url, data={"q": query}, headers={"User-Agent": "Mozilla/5.0 (jarvis web_search)"})
        if response.status_code >= 400:
            raise RuntimeError(f"DuckDuckGo answered HTTP {response.status_code}")
        page = _DuckDuckGoPage()
        page.feed(response.text)
        return [SearchHit(" ".join(h["title"].split()), h["url"], " ".join(h["snippet"].split()))
                for h in page.hits if h["url"]][:max_results]


#: The built-in backends by config name.
BACKENDS = {"searxng": SearXNG, "brave": Brave, "tavily": Tavily, "duckduckgo": DuckDuckGo}
