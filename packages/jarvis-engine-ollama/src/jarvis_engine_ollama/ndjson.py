"""Reading Ollama's NDJSON stream in network-sized batches of lines.

:meth:`HTTPEngine.astream_lines <jarvis_core.engine.http.HTTPEngine.astream_lines>` hands out one line per
async-generator step, and each step through a generator layer costs about as much as decoding a short
line. To keep the engine's chunk rate within 0.9x of a bare line loop (benchmarks/bench_ollama.py), this
reader yields *lists* of the lines that arrived together, so the only per-line generator step left is the
one to the caller. Sending, status errors, transport errors and cleanup are the core's
(:meth:`~jarvis_core.engine.http.HTTPEngine.astream_response`); lines are
decoded by the caller with :func:`jarvis_core.engine.streams.decode_json`, so an ``{"error": …}`` line
raises the core's typed error right where it arrives, after the text before it was delivered.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, AsyncIterator, List, Optional

import httpx

if TYPE_CHECKING:
    from jarvis_core.engine.http import HTTPEngine

__all__ = ["ndjson_batches"]

@contextlib.asynccontextmanager
async def ndjson_batches(
    engine: HTTPEngine, path: str, body: Any, *, model: Optional[str] = None
) -> AsyncIterator[AsyncIterator[List[str]]]:
    """POST ``body`` to ``path`` and yield an async iterator of line batches (lines may be blank).

    An error status raises before anything is yielded; a connection that breaks raises
    :class:`~jarvis_core.errors.StreamError`; leaving the block closes the response.
    """
    async with engine.astream_response(
        "POST", path, json_body=body, model=model, headers={"accept": "application/x-ndjson"}
    ) as response:
        yield _batches(engine, response, path)


async def _batches(engine: HTTPEngine, response: httpx.Response, path: str) -> AsyncIterator[List[str]]:
    rest = ""
    try:
        async for text in response.aiter_text():
            lines = (rest + text).split("\n") if rest else text.split("\n")
            rest = lines.pop()
            if lines:
                yield lines
    except httpx.TransportError as exc:
        raise engine.broken(exc, path) from None
    if rest:
        yield [rest]
