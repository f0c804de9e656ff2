"""The OpenAI-compatible routes: ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``GET /v1/models``,
``GET /health``.

Each route reads its body through its wire module (:mod:`.chat_request`, :mod:`.embeddings_request`), hands
the request to the logic (:mod:`.engine_chat` or :mod:`.agent_chat` for a chat completion, the engine for the
rest) and renders the answer (:mod:`.responses`). ``list_models`` and ``health`` run in worker threads; all
worker threads share the server's bound (``threads``).
"""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from jarvis_core.embeddings import result_to_openai
from jarvis_server.agent_chat import agent_completion
from jarvis_server.aliases import alias_models, unaliased
from jarvis_server.chat_request import parse_chat_request
from jarvis_server.embeddings_request import parse_embeddings_request
from jarvis_server.engine_chat import engine_completion
from jarvis_server.request_body import read_json
from jarvis_server.responses import error_response, json_response
from jarvis_server.state import server_state

__all__ = ["chat_completions", "embeddings", "health", "list_models"]


async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``: through the request's agent (or the server's), else the engine."""
    state = server_state(request)
    try:
        req = unaliased(state, parse_chat_request(await read_json(request), default_model=state.model,
                                                  allowed_options=sorted(state.engine.allowed_options)))
    except Exception as exc:
        return error_response(exc)
    if req.agent or state.agent:
        return await agent_completion(state, req, req.agent or state.agent or "")
    return await engine_completion(state, req)


async def embeddings(request: Request) -> Response:
    """``POST /v1/embeddings``: the engine's ``aembed``."""
    state = server_state(request)
    try:
        req = parse_embeddings_request(await read_json(request), default_model=state.model)
        result = await state.engine.aembed(req.inputs, model=req.model, **req.options)
    except Exception as exc:
        return error_response(exc)
    return json_response(result_to_openai(result, encoding_format=req.encoding, model=req.model))


async def list_models(request: Request) -> Response:
    """``GET /v1/models``: the engine's models (the served default first), then the config's aliases."""
    state = server_state(request)
    try:
        models = await anyio.to_thread.run_sync(state.engine.list_models, limiter=state.limiter)
    except Exception as exc:
        return error_response(exc)
    ids = [state.model] + [m for m in models if m != state.model] if state.model else list(models)
    data = [{"id": m, "object": "model", "created": 0, "owned_by": state.engine_key} for m in ids]
    data += [m for m in alias_models(state) if m["id"] not in ids]
    return json_response({"object": "list", "data": data})


async def health(request: Request) -> Response:
    """``GET /health``: 200 when the engine answers, 503 otherwise (no token needed; reveals no secret)."""
    state = server_state(request)
    ok = await anyio.to_thread.run_sync(state.engine.health, limiter=state.limiter)
    body = {"status": "ok" if ok else "unavailable", "engine": state.engine_key, "model": state.model}
    return json_response(body, 200 if ok else 503)
