"""URL prefetch: the pages a user's input links to, fetched through the tool executor before the first turn.

Off unless an agent turns it on (``url_prefetch=True``). The URLs of the input (at most
:data:`MAX_URLS`) are fetched with the ``web_fetch`` tool, as ordinary tool calls through a
:class:`~jarvis_core.tools.ToolExecutor`: events, the timeout, the output cap, and the SSRF check of
:mod:`~jarvis_agents.tools.web` on every hop. The texts (or why a fetch failed) are added to the end of
the user's message; the input, the context conversation and the tool loop stay as they are.
"""

from __future__ import annotations

import json
import re
from typing import Any, AsyncIterator, List, Mapping, Optional

from jarvis_agents.agents.context_window import fit_observation
from jarvis_core.agents import AgentEvent, AgentRun, Notice, ToolCallFinished, ToolCallsRequested
from jarvis_core.tools import ToolExecutor
from jarvis_core.types import Message, Role, ToolCall, ToolResult, new_call_id

__all__ = ["MAX_URLS", "fetch_executor", "prefetch_urls", "urls_in"]

MAX_URLS = 3
_URL = re.compile(r"https?://[^\s<>\"'`\]\)]+", re.I)
_FETCH = "web_fetch"


def urls_in(text: str) -> List[str]:
    """The distinct http(s) URLs of ``text``, in order, trailing punctuation removed; at most :data:`MAX_URLS`."""
    found: List[str] = []
    for match in _URL.finditer(text or ""):
        url = match.group(0).rstrip(".,;:!?")
        if url not in found:
            found.append(url)
    return found[:MAX_URLS]


def fetch_executor(options: Optional[Mapping[str, Any]], approver: Any, bus: Any) -> ToolExecutor:
    """An executor holding one ``web_fetch`` tool built with ``options`` (a ``ConfigError`` when they are bad)."""
    from jarvis_agents.tools.web import WebFetchTool

    return ToolExecutor([WebFetchTool(**dict(options or {}))], approver=approver, bus=bus)


async def prefetch_urls(run: AgentRun, executor: ToolExecutor, window: int, reply_tokens: Optional[int]
                        ) -> AsyncIterator[AgentEvent]:
    """Fetch the input's URLs with ``executor`` and add the results to the run's last user message."""
    urls = urls_in(run.input)
    if not urls:
        return
    calls = [ToolCall(new_call_id(), _FETCH, json.dumps({"url": u})) for u in urls]
    yield ToolCallsRequested(run.run_id, 0, tuple(calls))
    results: List[ToolResult] = []
    for call in calls:
        result = await executor.aexecute(call)
        results.append(result)
        yield ToolCallFinished(run.run_id, 0, result)
    run.tool_results.extend(results)
    last = run.messages[-1]
    assert last.role is Role.USER
    blocks = []
    for url, result in zip(urls, results, strict=True):
        body = fit_observation(result.content, run.messages, window, reply_tokens)
        blocks.append(f"--- {url} ({'fetched' if result.ok else 'not fetched'})\n{body}")
    run.messages[-1] = Message.user(f"{last.content or ''}\n\n[Pages linked above, fetched before this reply]\n"
                                    + "\n\n".join(blocks))
    fetched = sum(r.ok for r in results)
    yield Notice(run.run_id, "prefetch", f"fetched {fetched} of {len(urls)} URL(s) of the input", 0)
