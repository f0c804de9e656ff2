"""The OpenAI-compatible routes: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health``.

Completions use the engine's async calls on the event loop: ``agenerate`` (an engine without an async
client runs ``generate`` in a worker thread there) and ``stream_full``; ``list_models`` and ``health`` run
in worker threads. All worker threads share the server's bound (``threads``). A stream's
first engine chunk is awaited *before* the response starts, so a failure there is an ordinary HTTP error
with an OpenAI error object; a failure after the first byte is an ``error`` SSE event, then the stream ends
(never an error dressed up as content).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Dict, Optional

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from jarvis_core.errors import StreamError
from jarvis_core.types import StreamChunk, normalize_finish_reason
from jarvis_server.aliases import unaliased
from jarvis_server.body_limit import BodyTooLarge
from jarvis_server.chat_request import ChatRequest, parse_chat_request
from jarvis_server.chat_wire import ChunkWriter, completion_object
from jarvis_server.event_stream import EventStreamResponse, runnable
from jarvis_server.openai_errors import RequestError, error_for, sse_error
from jarvis_server.state import ServerState

__all__ = ["chat_completions", "error_response", "health", "json_response", "list_models", "read_json"]

#: Bytes rendered past which they are written even while the engine still has more at hand.
_WRITE_AT = 64 * 1024
#: Bytes rendered and not yet written past which the engine is not read: a client that stops reading
#: stops the engine read (uvicorn's ``send`` waits while the socket's buffer is full) instead of growing this.
_HOLD_AT = 4 * _WRITE_AT

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def json_response(data: Any, status: int = 200, headers: Optional[Dict[str, str]] = None) -> Response:
    """A JSON response (compact, UTF-8)."""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def error_response(exc: BaseException) -> Response:
    """The OpenAI error response for ``exc``."""
    status, body, headers = error_for(exc)
    return json_response(body, status, headers)


async def read_json(request: Request) -> Any:
    """The request body as JSON; a 400 (or 413, or 408) :class:`RequestError` when it is not.

    A ``Content-Length`` past ``max_body_bytes`` is refused before any byte is read; any other body is
    counted while it is read (:class:`~jarvis_server.body_limit.BodyLimit`, chunked bodies too). The
    whole body must arrive within ``body_timeout`` seconds."""
    settings = _state(request).settings
    size = request.headers.get("content-length")
    if size is not None and size.isdigit() and int(size) > settings.max_body_bytes:
        raise BodyTooLarge(settings.max_body_bytes)
    try:
        with anyio.fail_after(settings.body_timeout):
            raw = await request.body()
    except TimeoutError:
        raise RequestError(f"the request body did not arrive within {settings.body_timeout:g} s", status=408,
                           code="body_timeout") from None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(f"the request body is not valid JSON ({exc})", param="body") from None
    except RecursionError:
        raise RequestError("the request body is nested too deeply", param="body") from None


def _state(request: Request) -> ServerState:
    return request.app.state.jarvis


def _engine_kwargs(state: ServerState, req: ChatRequest) -> Dict[str, Any]:
    return dict(
        model=req.model,
        temperature=req.temperature,
        max_tokens=req.max_tokens if req.max_tokens is not None else state.default_max_tokens,
        tools=req.tools,
        **req.options,
    )


async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``."""
    state = _state(request)
    try:
        req = unaliased(state, parse_chat_request(await read_json(request), default_model=state.model,
                                                  allowed_options=sorted(state.engine.allowed_options)))
        if req.agent or state.agent:
            from jarvis_server.agent_chat import agent_completion

            return await agent_completion(state, req, req.agent or state.agent or "")
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


async def list_models(request: Request) -> Response:
    """``GET /v1/models``: the engine's models (the served default first)."""
    state = _state(request)
    try:
        models = await anyio.to_thread.run_sync(state.engine.list_models, limiter=state.limiter)
    except Exception as exc:
        return error_response(exc)
    ids = [state.model] + [m for m in models if m != state.model] if state.model else list(models)
    data = [{"id": m, "object": "model", "created": 0, "owned_by": state.engine_key} for m in ids]
    return json_response({"object": "list", "data": data})


async def health(request: Request) -> Response:
    """``GET /health``: 200 when the engine answers, 503 otherwise (no token needed; reveals no secret)."""
    state = _state(request)
    ok = await anyio.to_thread.run_sync(state.engine.health, limiter=state.limiter)
    body = {"status": "ok" if ok else "unavailable", "engine": state.engine_key, "model": state.model}
    return json_response(body, 200 if ok else 503)
