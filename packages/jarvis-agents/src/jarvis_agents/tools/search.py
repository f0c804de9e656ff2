"""``web_search(query, max_results=5)``: titles, URLs and snippets from the search backend the config names.

Options (``[tools.web_search]``): ``backend`` (``searxng``, ``brave``, ``tavily``, ``duckduckgo``, or a
plugin's ``"package.module:Backend"``; see :mod:`.search_backends`), ``url`` (the backend's endpoint: the
instance for SearXNG, an override for the others), ``api_key`` (Brave, Tavily), ``timeout`` (15 s),
``max_bytes`` (the most read of one answer, 2 MB). Without a backend the tool is not built, and the error says
what to set.
"""

from __future__ import annotations

from typing import Annotated, Any, List

import httpx

from jarvis_agents.tools.search_backends import BACKENDS, SearchHit
from jarvis_core.errors import ConfigError
from jarvis_core.tools import ToolPolicy
from jarvis_core.tools.signature import signature_of
from jarvis_core.types import ToolSpec

__all__ = ["WebSearchTool"]

NO_BACKEND = ("the web_search tool needs a search backend; set one in the config file:\n[tools.web_search]\n"
              'backend = "searxng"   # with url = "http://localhost:8888" (your instance)\n'
              '# or "brave" / "tavily" with api_key = "...", or "duckduckgo" (no key)')


def _arguments(query: Annotated[str, {"minLength": 1, "maxLength": 400}],
               max_results: Annotated[int, {"minimum": 1, "maximum": 10}] = 5) -> None:
    """Search the web. Returns the best results, each with its title, URL and a snippet.

    Args:
        query: what to search for, as you would type it into a search engine.
        max_results: how many results to return.
    """


class _Capped:
    """An httpx client whose answers are read up to ``max_bytes`` (a larger one is an error)."""

    def __init__(self, client: httpx.Client, max_bytes: int) -> None:
        self._client, self._max = client, max_bytes

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        with self._client.stream(method, url, **options) as response:
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > self._max:
                    raise RuntimeError(f"the search backend's answer is larger than {self._max} bytes")
            headers = [(k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding",
                                                                                       "content-length")]
            return httpx.Response(response.status_code, headers=headers, content=body, request=response.request)

    def get(self, url: str, **options: Any) -> httpx.Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> httpx.Response:
        return self.request("POST", url, **options)


def _backend(name: str, url: str, api_key: str) -> Any:
    if not name:
        raise ConfigError(NO_BACKEND, key="tools.web_search.backend")
    if name in BACKENDS:
        return BACKENDS[name](url=url, api_key=api_key)
    if ":" in name:
        from jarvis_core.plugins.registry import load_target

        try:
            target = load_target(name)
        except Exception as exc:
            raise ConfigError(f"the web_search backend {name!r} could not be imported: {type(exc).__name__}: {exc}",
                              key="tools.web_search.backend") from None
        backend = target(url=url, api_key=api_key)
        if not callable(getattr(backend, "search", None)):
            raise ConfigError(f"the web_search backend {name!r} has no search(client, query, max_results)",
                              key="tools.web_search.backend")
        return backend
    known = ", ".join(BACKENDS)
    raise ConfigError(f"unknown web_search backend {name!r}; use one of {known}, or a plugin's "
                      "'package.module:Backend'", key="tools.web_search.backend")


class WebSearchTool:
    """``web_search(query, max_results=5)`` → numbered results: title, URL, snippet."""

    spec = ToolSpec("web_search", signature_of(_arguments, tool_name="web_search").description,
                    signature_of(_arguments, tool_name="web_search").parameters)
    policy = ToolPolicy(side_effects="read", timeout=60.0, open_world=True)

    def __init__(self, backend: str = "", url: str = "", api_key: str = "", timeout: float = 15.0,
                 max_bytes: int = 2_000_000) -> None:
        self.backend = _backend(backend, url, api_key)
        self.name = backend
        self.timeout = float(timeout)
        self.max_bytes = int(max_bytes)

    def __repr__(self) -> str:  # never the key
        return f"<WebSearchTool backend={self.name!r}>"

    def run(self, query: str, max_results: int = 5) -> str:
        """The results for ``query``, or a line saying there are none."""
        try:
            with httpx.Client(timeout=self.timeout, follow_redirects=True, trust_env=False) as client:
                hits: List[SearchHit] = self.backend.search(_Capped(client, self.max_bytes), query, max_results)
        except httpx.HTTPError as exc:
            raise RuntimeError(f"the {self.name} search backend could not be reached ({type(exc).__name__})") from None
        if not hits:
            return f"no results for {query!r}"
        return "\n".join(f"{i}. {h.title or h.url}\n   {h.url}" + (f"\n   {h.snippet}" if h.snippet else "")
                         for i, h in enumerate(hits[:max_results], 1))
