"""Reading Ollama's NDJSON stream in network-sized batches of lines.

:meth:`HTTPEngine.astream_lines <jarvis_core.engine.http.HTTPEngine.astream_lines>` hands out one line per
async-generator step, and each step through a generator layer costs about as much as decoding a short
line. To keep the engine's chunk rate within 0.9x of a bare line loop (benchmarks/bench_ollama.py), this
reader yields *lists* of the lines that arrived together, so the only per-line generator step left is the
one to the caller. Status errors, transport errors and cleanup are those of the core's plumbing
(:func:`~jarvis_core.engine.http.translate_transport_error`, the engine's ``classify_error``); lines are
decoded by the caller with :func:`jarvis_core.engine.streams.decode_json`, so an ``{"error": …}`` line
raises the core's typed error right where it arrives, after the text before it was delivered.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, AsyncIterator, List, Optional

import httpx

from jarvis_core.engine.http import translate_transport_error
from jarvis_core.errors import StreamError

if TYPE_CHECKING:
    from jarvis_core.engine.http import HTTPEngine

__all__ = ["ndjson_batches"]

_HEADERS = {"content-type": "application/json", "accept": "application/x-ndjson"}


@contextlib.asynccontextmanager
async def ndjson_batches(
    engine: HTTPEngine, path: str, body: Any, *, model: Optional[str] = None
) -> AsyncIterator[AsyncIterator[List[str]]]:
    """POST ``body`` to ``path`` and yield an async iterator of line batches (lines may be blank).

    An error status raises before anything is yielded; a connection that breaks raises
    :class:`~jarvis_core.errors.StreamError`; leaving the block closes the response.
    """
    url = engine.base_url + path
    request = engine.aclient.build_request("POST", path, content=json.dumps(body).encode(), headers=_HEADERS)
    try:
        response = await engine.aclient.send(request, stream=True)
    except httpx.TransportError as exc:
        raise translate_transport_error(exc, engine_id=engine.engine_id, url=url) from None
    try:
        if response.status_code >= 400:
            await response.aread()
            engine._raise_for_status(response, model=model)
        yield _batches(engine.engine_id, response, url)
    finally:
        await response.aclose()


async def _batches(engine_id: str, response: httpx.Response, url: str) -> AsyncIterator[List[str]]:
    rest = ""
    try:
        async for text in response.aiter_text():
            lines = (rest + text).split("\n") if rest else text.split("\n")
            rest = lines.pop()
            if lines:
                yield lines
    except httpx.TransportError as exc:
        err = translate_transport_error(exc, engine_id=engine_id, url=url)
        if not isinstance(err, StreamError):
            err = StreamError(f"{engine_id}: the stream from {url} broke off: {err}", engine_id=engine_id)
        raise err from None
    if rest:
        yield [rest]
