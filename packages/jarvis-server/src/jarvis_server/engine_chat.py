"""Chat completions answered by the served engine, streamed or not.

Completions use the engine's async calls on the event loop: ``agenerate`` (an engine without an async
client runs ``generate`` in a worker thread there) and ``stream_full``. A stream's first engine chunk is
awaited *before* the response starts, so a failure there is an ordinary HTTP error with an OpenAI error
object; a failure after the first byte is an ``error`` SSE event, then the stream ends (never an error
dressed up as content).
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict, Optional

from starlette.responses import Response

from jarvis_core.errors import StreamError
from jarvis_core.types import StreamChunk, normalize_finish_reason
from jarvis_server.chat_request import ChatRequest
from jarvis_server.chat_wire import ChunkWriter, completion_object
from jarvis_server.event_stream import EventStreamResponse, runnable
from jarvis_server.openai_errors import sse_error
from jarvis_server.responses import SSE_HEADERS, error_response, json_response
from jarvis_server.state import ServerState

__all__ = ["engine_completion"]

#: Bytes rendered past which they are written even while the engine still has more at hand.
_WRITE_AT = 64 * 1024
#: Bytes rendered and not yet written past which the engine is not read: a client that stops reading
#: stops the engine read (uvicorn's ``send`` waits while the socket's buffer is full) instead of growing this.
_HOLD_AT = 4 * _WRITE_AT


def _engine_kwargs(state: ServerState, req: ChatRequest) -> Dict[str, Any]:
    return dict(
        model=req.model,
        temperature=req.temperature,
        max_tokens=req.max_tokens if req.max_tokens is not None else state.default_max_tokens,
        tools=req.tools,
        **req.options,
    )


async def engine_completion(state: ServerState, req: ChatRequest) -> Response:
    """Answer ``req`` through the served engine."""
    try:
        kwargs = _engine_kwargs(state, req)
        if not req.stream:
            completion = await state.engine.agenerate(req.messages, **kwargs)
            if completion.finish_reason == "error":
                raise StreamError("the engine reported an error instead of an answer", engine_id=state.engine_key)
            return json_response(completion_object(completion, model=req.model))
        chunks = state.engine.stream_full(req.messages, **kwargs).__aiter__()
        try:
            first: Optional[StreamChunk] = await chunks.__anext__()
        except StopAsyncIteration:
            first = None
        except BaseException:
            await _aclose(chunks)
            raise
    except Exception as exc:
        return error_response(exc)
    writer = ChunkWriter(req.model, include_usage=req.include_usage)
    return EventStreamResponse(_sse(first, chunks, writer), headers=SSE_HEADERS)


async def _aclose(chunks: Any) -> None:
    close = getattr(chunks, "aclose", None)
    if close is not None:
        await close()


def _render(chunk: StreamChunk, writer: ChunkWriter) -> bytes:
    out = b""
    if chunk.reasoning:
        out += writer.reasoning(chunk.reasoning)
    if chunk.content:
        out += writer.content(chunk.content)
    if chunk.tool_calls:
        out += writer.tool_calls(chunk.tool_calls)
    return out


async def _sse(first: Optional[StreamChunk], chunks: AsyncIterator[StreamChunk], writer: ChunkWriter) -> AsyncIterator[bytes]:
    # The engine is read by a task of its own that renders into a buffer; the response takes what has piled
    # up once that task waits on the network. A slow model gets one write per token; a burst (the backend
    # sent many chunks in one packet) becomes one write instead of hundreds, and a stream the backend sent
    # at once, its end included, goes out in one.
    buf = bytearray(writer.role())
    ready = asyncio.Event()
    room = asyncio.Event()
    done = False

    async def produce() -> None:
        nonlocal done
        usage = None
        finish: Optional[str] = None
        try:
            chunk = first
            content, wake, following = writer.content, ready.set, chunks.__anext__
            while chunk is not None:
                # One unpacking instead of five attribute reads: this loop runs once per token.
                text, reasoning, calls, reason, used, _, _ = chunk
                if reasoning or calls:
                    buf.extend(_render(chunk, writer))
                elif text:  # most chunks: one content delta
                    buf.extend(content(text))
                wake()
                if len(buf) >= _HOLD_AT:
                    room.clear()
                    await room.wait()
                if used is not None:
                    usage = used
                if reason:
                    finish = reason
                try:
                    chunk = await following()
                except StopAsyncIteration:
                    chunk = None
            if finish == "error":
                raise StreamError("the engine ended the stream with an error")
            buf.extend(writer.final(normalize_finish_reason(finish, has_tool_calls=writer.tool_index > 0), usage))
        except Exception as exc:
            buf.extend(sse_error(exc))
        finally:
            done = True
            ready.set()
            await _aclose(chunks)

    task = asyncio.get_running_loop().create_task(produce())
    try:
        while True:
            await ready.wait()
            while not done and len(buf) < _WRITE_AT and runnable(task):
                await asyncio.sleep(0)
            ready.clear()
            if buf:
                out = bytes(buf)
                buf.clear()
                room.set()
                yield out
            if done and not buf:
                break
    finally:
        task.cancel()
