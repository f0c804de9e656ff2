"""The ``/v1/managed-agents`` routes.

========================================== ============================================================
``POST   /v1/managed-agents``              ``{name, agent_type, config?}`` → 201 the agent
``GET    /v1/managed-agents``              ``{"agents": [...]}`` (archived ones hidden)
``GET    /v1/managed-agents/{id}``         the agent, or 404
``PATCH  /v1/managed-agents/{id}``         ``{name?, agent_type?, config?}``; ``config`` is *merged* (a key set
                                           to null is removed); type and config re-validated
``DELETE /v1/managed-agents/{id}``         archives it → ``{"id", "status": "archived"}``
``POST   /v1/managed-agents/{id}/run``     202 ``{"run_id"}`` answering the pending messages, or 409 when
                                           already running (decided atomically) or nothing is pending
``GET    /v1/managed-agents/{id}/runs/{r}`` the run
``POST   /v1/managed-agents/{id}/runs/{r}/cancel`` cancels a running run (streamed or not) → the run, now
                                           ``cancelled``; 409 when it is not running
``GET    /v1/managed-agents/{id}/messages`` ``?after=SEQ&limit=N`` → ``{"messages": [...]}`` in ``seq`` order
``POST   /v1/managed-agents/{id}/messages`` ``{content, stream}``: ``stream: false`` → 202 the queued message
                                           (the next run delivers it); ``stream: true`` → SSE (see runner)
========================================== ============================================================
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Dict, List, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from jarvis_server.event_stream import EventStreamResponse
from jarvis_server.managed.runner import events_as_sse
from jarvis_server.managed.store import agent_json, message_json, run_json
from jarvis_server.openai_errors import RequestError
from jarvis_server.openai_routes import SSE_HEADERS, error_response, json_response, read_json

if TYPE_CHECKING:
    from jarvis_server.managed.service import ManagedAgents

__all__ = ["managed_routes"]

PREFIX = "/v1/managed-agents"
#: The largest message sequence number (SQLite's largest integer).
MAX_SEQ = 2**63 - 1
#: Seconds ``POST …/cancel`` waits for the run to record itself as cancelled before answering.
CANCEL_WAIT = 5.0


def _object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise RequestError("the request body must be a JSON object", param="body")
    return body


def _only(body: Mapping[str, Any], allowed: tuple[Any, ...]) -> None:
    unknown = sorted(k for k in body if k not in allowed)
    if unknown:
        raise RequestError(f"unsupported field(s) {', '.join(map(repr, unknown))}", param=unknown[0],
                           code="unsupported_parameter")


def _string(body: Mapping[str, Any], key: str, *, required: bool) -> Any:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RequestError(f"{key} must be a non-empty string", param=key)
    return value


def _not_found(agent_id: str) -> RequestError:
    return RequestError(f"no managed agent {agent_id!r}", status=404, param="id", code="agent_not_found")


def managed_routes(service: ManagedAgents) -> List[BaseRoute]:
    """The routes, bound to ``service``."""
    store = service.store

    async def live_agent(agent_id: str) -> Dict[str, Any]:
        row = await store.call(store.get_agent, agent_id)
        if row is None:
            raise _not_found(agent_id)
        if row["status"] == "archived":
            raise RequestError(f"managed agent {agent_id!r} is archived", status=409, code="agent_archived")
        return row

    async def create(request: Request) -> Response:
        body = _object(await read_json(request))
        _only(body, ("name", "agent_type", "config"))
        name = _string(body, "name", required=True)
        agent_type = _string(body, "agent_type", required=True)
        config = body.get("config")
        if config is None:
            config = {}
        if not isinstance(config, Mapping):
            raise RequestError("config must be a JSON object", param="config")
        await service.check(agent_type, config)
        row = await store.call(store.create_agent, name, agent_type, dict(config))
        return json_response(agent_json(row), 201)

    async def list_all(request: Request) -> Response:
        rows = await store.call(store.list_agents)
        return json_response({"agents": [agent_json(r) for r in rows]})

    async def get_one(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        row = await store.call(store.get_agent, agent_id)
        if row is None:
            raise _not_found(agent_id)
        return json_response(agent_json(row))

    async def patch(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        body = _object(await read_json(request))
        _only(body, ("name", "agent_type", "config"))
        row = await live_agent(agent_id)
        current = agent_json(row)
        name = _string(body, "name", required=False)
        agent_type = _string(body, "agent_type", required=False) or current["agent_type"]
        changes = body.get("config")
        if changes is not None and not isinstance(changes, Mapping):
            raise RequestError("config must be a JSON object", param="config")
        config = dict(current["config"])
        for key, value in (changes or {}).items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        await service.check(agent_type, config)
        updated = await store.call(store.update_agent, agent_id, name=name, agent_type=agent_type, config=config)
        if updated is None:
            raise _not_found(agent_id)
        return json_response(agent_json(updated))

    async def delete(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        if not await store.call(store.archive_agent, agent_id):
            raise _not_found(agent_id)
        return json_response({"id": agent_id, "status": "archived"})

    async def run(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        outcome, run_id, pending = await store.call(store.claim_agent, agent_id)
        if outcome == "missing":
            raise _not_found(agent_id)
        if outcome == "nothing_pending":
            raise RequestError(f"managed agent {agent_id!r} has no pending messages to answer (a streamed "
                               "message is answered by its own stream)", status=409, code="nothing_pending")
        if outcome != "ok" or run_id is None:
            raise RequestError(f"managed agent {agent_id!r} is {outcome}", status=409, code=f"agent_{outcome}")
        row = await store.call(store.get_agent, agent_id)
        if row is None:
            raise _not_found(agent_id)
        text = "\n\n".join(m["content"] for m in pending)
        before = pending[0]["seq"] if pending else 2**62
        await service.launch(row, run_id=run_id, input=text, delivered=[m["id"] for m in pending], before=before,
                             release=True, stream=False)
        return json_response({"run_id": run_id, "status": "running", "messages": len(pending)}, 202)

    async def get_run(request: Request) -> Response:
        agent_id, run_id = request.path_params["agent_id"], request.path_params["run_id"]
        row = await store.call(store.get_run, agent_id, run_id)
        if row is None:
            raise RequestError(f"no run {run_id!r} of managed agent {agent_id!r}", status=404, code="run_not_found")
        return json_response(run_json(row))

    async def cancel_run(request: Request) -> Response:
        agent_id, run_id = request.path_params["agent_id"], request.path_params["run_id"]
        row = await store.call(store.get_run, agent_id, run_id)
        if row is None:
            raise RequestError(f"no run {run_id!r} of managed agent {agent_id!r}", status=404, code="run_not_found")
        running = service.runs.get(run_id)
        if running is None or running.task is None or running.task.done():
            raise RequestError(f"run {run_id!r} is not running (it is {row['status']})", status=409,
                               code="run_not_running")
        running.cancel()
        await asyncio.wait({running.task}, timeout=CANCEL_WAIT)  # it records itself as cancelled
        after: Any = await store.call(store.get_run, agent_id, run_id)
        return json_response(run_json(after or row))

    async def messages(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        if await store.call(store.get_agent, agent_id) is None:
            raise _not_found(agent_id)
        try:
            after = int(request.query_params.get("after", "0"))
            limit = int(request.query_params.get("limit", "500"))
        except ValueError:
            raise RequestError("after and limit must be integers", param="after") from None
        if not 0 <= after <= MAX_SEQ:
            raise RequestError(f"after must be between 0 and {MAX_SEQ}", param="after")
        if not 1 <= limit <= 5000:
            raise RequestError("limit must be between 1 and 5000", param="limit")
        rows = await store.call(store.messages, agent_id, after=after, limit=limit)
        return json_response({"messages": [message_json(r) for r in rows]})

    async def post_message(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        body = _object(await read_json(request))
        _only(body, ("content", "stream"))
        content = _string(body, "content", required=True)
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise RequestError("stream must be true or false", param="stream")
        row = await live_agent(agent_id)
        if not stream:
            message = await store.call(store.add_message, agent_id, "user", content, status="pending")
            return json_response(message_json(message), 202)
        message, run_id = await store.call(store.start_stream_run, agent_id, content)
        task = await service.launch(row, run_id=run_id, input=content, delivered=[message["id"]],
                                    before=message["seq"], release=False, stream=True)
        model = str(agent_json(row)["config"].get("model") or service.model)
        return EventStreamResponse(events_as_sse(task, model), headers={**SSE_HEADERS, "x-jarvis-run-id": run_id})

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:
                return error_response(exc)

        return endpoint

    return [
        Route(PREFIX, guarded(create), methods=["POST"]),
        Route(PREFIX, guarded(list_all), methods=["GET"]),
        Route(PREFIX + "/{agent_id}", guarded(get_one), methods=["GET"]),
        Route(PREFIX + "/{agent_id}", guarded(patch), methods=["PATCH"]),
        Route(PREFIX + "/{agent_id}", guarded(delete), methods=["DELETE"]),
        Route(PREFIX + "/{agent_id}/run", guarded(run), methods=["POST"]),
        Route(PREFIX + "/{agent_id}/runs/{run_id}", guarded(get_run), methods=["GET"]),
        Route(PREFIX + "/{agent_id}/runs/{run_id}/cancel", guarded(cancel_run), methods=["POST"]),
        Route(PREFIX + "/{agent_id}/messages", guarded(messages), methods=["GET"]),
        Route(PREFIX + "/{agent_id}/messages", guarded(post_message), methods=["POST"]),
    ]
