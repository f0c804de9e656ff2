"""``web_search`` against loopback fakes of each backend's documented response (SearXNG's JSON API, Brave
Search, Tavily, DuckDuckGo's HTML page) and a plugin's backend; the tests reach no outside address."""

from __future__ import annotations

import json

import pytest

from jarvis_agents.tools.search import WebSearchTool
from jarvis_core.errors import ConfigError
from jarvis_core.testing import Exchange, ReplayServer
from jarvis_core.tools import ToolExecutor
from jarvis_core.types import ToolCall

EXPECTED = ("1. Paris - Wikipedia\n   https://en.wikipedia.org/wiki/Paris\n   Paris is the capital of France.\n"
            "2. Paris tourism\n   https://www.paris.fr/\n   Visit Paris.")

SEARXNG = {"query": "paris", "number_of_results": 2, "results": [
    {"url": "https://en.wikipedia.org/wiki/Paris", "title": "Paris - Wikipedia", "content": "Paris is the capital of France.",
     "engine": "wikipedia", "score": 1.0},
    {"url": "https://www.paris.fr/", "title": "Paris tourism", "content": "Visit Paris.", "engine": "bing"},
    {"url": "https://example.org/3", "title": "third", "content": "cut by max_results"}]}
BRAVE = {"type": "search", "query": {"original": "paris"}, "web": {"type": "search", "results": [
    {"title": "Paris - Wikipedia", "url": "https://en.wikipedia.org/wiki/Paris",
     "description": "Paris is the capital of France.", "is_source_local": False},
    {"title": "Paris tourism", "url": "https://www.paris.fr/", "description": "Visit Paris."}]}}
TAVILY = {"query": "paris", "answer": None, "images": [], "response_time": 1.2, "results": [
    {"title": "Paris - Wikipedia", "url": "https://en.wikipedia.org/wiki/Paris", "content": "Paris is the capital of France.",
     "score": 0.98, "raw_content": None},
    {"title": "Paris tourism", "url": "https://www.paris.fr/", "content": "Visit Paris.", "score": 0.9}]}
DDG = """<!DOCTYPE html><html><body><div id="links" class="results">
<div class="result results_links results_links_deep web-result"><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FParis&amp;rut=abc">Paris - <b>Wikipedia</b></a></h2>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FParis">Paris is the
 capital of <b>France</b>.</a></div></div>
<div class="result results_links results_links_deep web-result"><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="https://www.paris.fr/">Paris tourism</a></h2>
<a class="result__snippet" href="https://www.paris.fr/">Visit Paris.</a></div></div>
</div></body></html>"""


@pytest.fixture
def server():
    servers = []

    def start(*exchanges):
        srv = ReplayServer(list(exchanges)).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def _search(tool: WebSearchTool, query: str = "paris", max_results: int = 2):
    return ToolExecutor([tool]).execute(ToolCall("s", "web_search", json.dumps({"query": query, "max_results": max_results})))


def test_searxng(server):
    srv = server(Exchange("GET", "/search", json=SEARXNG))
    result = _search(WebSearchTool(backend="searxng", url=srv.url))
    assert (result.ok, result.content) == (True, EXPECTED)
    assert srv.requests[0].query == {"q": "paris", "format": "json"}


def test_brave(server):
    srv = server(Exchange("GET", "/res/v1/web/search", json=BRAVE))
    tool = WebSearchTool(backend="brave", url=srv.url + "/res/v1/web/search", api_key="brave-key")
    assert _search(tool).content == EXPECTED
    request = srv.requests[0]
    assert request.query == {"q": "paris", "count": "2"} and request.headers["x-subscription-token"] == "brave-key"
    assert "brave-key" not in repr(tool)


def test_tavily(server):
    srv = server(Exchange("POST", "/search", json=TAVILY))
    assert _search(WebSearchTool(backend="tavily", url=srv.url + "/search", api_key="tvly-key")).content == EXPECTED
    assert srv.requests[0].json == {"query": "paris", "max_results": 2}
    assert srv.requests[0].headers["authorization"] == "Bearer tvly-key"


def test_duckduckgo_html(server):
    srv = server(Exchange("POST", "/html/", raw=DDG, headers={"Content-Type": "text/html; charset=utf-8"}))
    assert _search(WebSearchTool(backend="duckduckgo", url=srv.url + "/html/")).content == EXPECTED
    assert srv.requests[0].body == b"q=paris"


def test_no_results_and_failures_are_results_the_model_reads(server):
    empty = server(Exchange("GET", "/search", json={"results": []}))
    assert _search(WebSearchTool(backend="searxng", url=empty.url), "nothing").content == "no results for 'nothing'"
    down = server(Exchange("GET", "/search", status=500, json={"error": "down"}))
    failed = _search(WebSearchTool(backend="searxng", url=down.url))
    assert not failed.ok and failed.content == "error: RuntimeError: SearXNG answered HTTP 500"


def test_an_oversized_answer_is_refused(server):
    srv = server(Exchange("GET", "/search", raw="x" * 5000))
    failed = _search(WebSearchTool(backend="searxng", url=srv.url, max_bytes=1000))
    assert failed.content == "error: RuntimeError: the search backend's answer is larger than 1000 bytes"


def test_a_plugin_backend(server, tmp_path, monkeypatch):
    (tmp_path / "acme_search.py").write_text(
        "from jarvis_agents.tools.search_backends import SearchHit\n"
        "class Backend:\n"
        "    def __init__(self, url='', api_key=''):\n        self.url = url\n"
        "    def search(self, client, query, max_results):\n"
        "        return [SearchHit('Acme', self.url + '/' + query, 'from the acme index')]\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    tool = WebSearchTool(backend="acme_search:Backend", url="https://acme.invalid")
    assert _search(tool, "rockets").content == "1. Acme\n   https://acme.invalid/rockets\n   from the acme index"


@pytest.mark.parametrize("options, message", [
    ({}, "the web_search tool needs a search backend; set one in the config file:\n[tools.web_search]\nbackend = "),
    ({"backend": "bing"}, "unknown web_search backend 'bing'; use one of searxng, brave, tavily, duckduckgo"),
    ({"backend": "brave"}, "the brave search backend needs an API key; set it in the config file:"),
    ({"backend": "searxng"}, "the searxng search backend needs the instance's address; set it in the config file:"),
])
def test_a_missing_or_wrong_backend_says_what_to_set(options, message):
    with pytest.raises(ConfigError) as info:
        WebSearchTool(**options)
    assert str(info.value).startswith(message)


def test_the_schema_comes_from_the_signature():
    assert WebSearchTool.spec.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 400,
                      "description": "what to search for, as you would type it into a search engine."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5,
                            "description": "how many results to return."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
