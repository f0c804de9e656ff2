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

Each handler reads its request through :mod:`.wire`, calls the service (:mod:`.service`, found at
``app.state.jarvis.managed``) and renders what it returns; a refusal is the OpenAI error response.
"""

from __future__ import annotations

import functools
from typing import Awaitable, Callable, List

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from jarvis_server.event_stream import EventStreamResponse
from jarvis_server.managed import wire
from jarvis_server.managed.runner import events_as_sse
from jarvis_server.managed.service import ManagedAgents
from jarvis_server.request_body import read_json
from jarvis_server.responses import SSE_HEADERS, error_response, json_response
from jarvis_server.state import server_state

__all__ = ["PREFIX", "managed_routes"]

PREFIX = "/v1/managed-agents"

Handler = Callable[[ManagedAgents, Request], Awaitable[Response]]


def _endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` as a Starlette endpoint: given the application's service, its errors answered."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        try:
            service = server_state(request).managed
            if service is None:  # managed_routes() is only composed into an app with a service
                raise RuntimeError("managed agents are not enabled on this server")
            return await handler(service, request)
        except Exception as exc:
            return error_response(exc)

    return endpoint


@_endpoint
async def create(service: ManagedAgents, request: Request) -> Response:
    row = await service.create_agent(wire.parse_new_agent(await read_json(request)))
    return json_response(wire.agent_json(row), 201)


@_endpoint
async def list_all(service: ManagedAgents, request: Request) -> Response:
    return json_response({"agents": [wire.agent_json(r) for r in await service.list_agents()]})


@_endpoint
async def get_one(service: ManagedAgents, request: Request) -> Response:
    return json_response(wire.agent_json(await service.get_agent(request.path_params["agent_id"])))


@_endpoint
async def patch(service: ManagedAgents, request: Request) -> Response:
    changes = wire.parse_agent_patch(await read_json(request))
    return json_response(wire.agent_json(await service.update_agent(request.path_params["agent_id"], changes)))


@_endpoint
async def delete(service: ManagedAgents, request: Request) -> Response:
    agent_id = request.path_params["agent_id"]
    await service.archive_agent(agent_id)
    return json_response({"id": agent_id, "status": "archived"})


@_endpoint
async def run(service: ManagedAgents, request: Request) -> Response:
    run_id, answered = await service.run_pending(request.path_params["agent_id"])
    return json_response({"run_id": run_id, "status": "running", "messages": answered}, 202)


@_endpoint
async def get_run(service: ManagedAgents, request: Request) -> Response:
    row = await service.get_run(request.path_params["agent_id"], request.path_params["run_id"])
    return json_response(wire.run_json(row))


@_endpoint
async def cancel_run(service: ManagedAgents, request: Request) -> Response:
    row = await service.cancel_run(request.path_params["agent_id"], request.path_params["run_id"])
    return json_response(wire.run_json(row))


@_endpoint
async def messages(service: ManagedAgents, request: Request) -> Response:
    page = wire.parse_message_page(request.query_params)
    rows = await service.messages(request.path_params["agent_id"], page)
    return json_response({"messages": [wire.message_json(r) for r in rows]})


@_endpoint
async def post_message(service: ManagedAgents, request: Request) -> Response:
    agent_id = request.path_params["agent_id"]
    message = wire.parse_new_message(await read_json(request))
    if not message.stream:
        return json_response(wire.message_json(await service.queue_message(agent_id, message.content)), 202)
    started, model = await service.stream_message(agent_id, message.content)
    return EventStreamResponse(events_as_sse(started, model),
                               headers={**SSE_HEADERS, "x-jarvis-run-id": started.run_id})


def managed_routes() -> List[BaseRoute]:
    """The ``/v1/managed-agents`` routes (:func:`jarvis_server.app.create_app` adds them when the app has a
    managed-agents service)."""
    return [
        Route(PREFIX, create, methods=["POST"]),
        Route(PREFIX, list_all, methods=["GET"]),
        Route(PREFIX + "/{agent_id}", get_one, methods=["GET"]),
        Route(PREFIX + "/{agent_id}", patch, methods=["PATCH"]),
        Route(PREFIX + "/{agent_id}", delete, methods=["DELETE"]),
        Route(PREFIX + "/{agent_id}/run", run, methods=["POST"]),
        Route(PREFIX + "/{agent_id}/runs/{run_id}", get_run, methods=["GET"]),
        Route(PREFIX + "/{agent_id}/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
        Route(PREFIX + "/{agent_id}/messages", messages, methods=["GET"]),
        Route(PREFIX + "/{agent_id}/messages", post_message, methods=["POST"]),
    ]
