"""The managed-agents service: builds stored agents from the registry and starts their runs.

An agent's stored ``config`` holds:

``tools``            registered tool keys the agent may use
``approved_tools``   tool keys whose calls need confirmation but are pre-approved; any other tool that needs
                     confirmation is denied in the server (fails closed), and the denial is a ``tool_result``
                     with ``ok: false`` in the stream
``model``            the model (default: the agent type's ``[agents.<type>] model``, else the server's); an
                     alias (``[aliases]``) becomes its model, its options under the config's own, and one
                     naming another engine than the served one is a 400
anything else        the agent's own options (``temperature``, ``max_tokens``, ``max_turns``,
                     ``system_prompt``, ``parallel_tools``, …), passed to its constructor

The agent type and the config are checked when written (``POST``/``PATCH``) by building the agent from the
registry exactly as a run will: an unknown type or tool, or an option the agent or engine rejects, is a 400
naming it. The stored agent type is the one that runs, streamed or not.

An agent class that keeps memory between runs (``accepts_stores``, the core's contract: ``operative``,
``monitor_operative``) is given the server's own database as its stores (:mod:`.memory`) with its managed-agent
id as operator id, so its session and state live in ``agents.db``; it loads its history itself, so a run gives
it no context of earlier messages. ``operator_id``, ``sessions``, ``state`` and ``db`` are then the server's
to set, and a config naming them is a 400.

The routes (:mod:`.routes`) read requests through :mod:`.wire` and call the operations here; a refusal is a
:class:`~jarvis_server.openai_errors.RequestError` carrying its status (404 for an unknown agent or run, 409
for an agent in the wrong state).
"""

from __future__ import annotations

import asyncio
import functools
import json
import pathlib
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Set, Tuple

import anyio.to_thread

from jarvis_core.aliases import apply_alias_options
from jarvis_core.events import default_bus
from jarvis_core.types import AgentContext, Message
from jarvis_server.agent_model import agent_model
from jarvis_server.managed.memory import ServerSessionStore, ServerStateStore
from jarvis_server.managed.runner import RunTask, off_the_loop, run_error
from jarvis_server.managed.store import Store
from jarvis_server.managed.wire import AgentPatch, MessagePage, NewAgent
from jarvis_server.openai_errors import RequestError
from jarvis_server.settings import ServerSettings

if TYPE_CHECKING:
    from jarvis_core.engine.base import InferenceEngine

__all__ = ["ManagedAgents", "open_service"]

#: Config keys the service reads itself (everything else goes to the agent's constructor).
OWN_KEYS = ("tools", "approved_tools", "model")
#: Options the server sets itself for an agent that keeps memory in the server's database.
STORE_KEYS = ("operator_id", "sessions", "state", "db")
#: The operator id an agent is built with when its config is checked before it has an id of its own.
UNSAVED_ID = "unsaved-agent"
#: Seconds :meth:`ManagedAgents.cancel_run` waits for the run to record itself as cancelled.
CANCEL_WAIT = 5.0


def _str_list(config: Mapping[str, Any], key: str) -> List[str]:
    value = config.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RequestError(f"config.{key} must be a list of registered tool names", param=f"config.{key}")
    return list(value)


def _approver(approved: Set[str]) -> Any:
    def approve(call: Any, tool: Any) -> bool:
        return bool(call.name in approved)

    return approve


def _not_found(agent_id: str) -> RequestError:
    return RequestError(f"no managed agent {agent_id!r}", status=404, param="id", code="agent_not_found")


class ManagedAgents:
    """Managed agents over one engine and one store (at ``app.state.jarvis.managed``, where the routes of
    :mod:`.routes` find it)."""

    def __init__(self, store: Store, engine: InferenceEngine, *, model: str, config: Any = None,
                 registry: Any = None, settings: Optional[ServerSettings] = None,
                 engine_key: Optional[str] = None) -> None:
        self.store = store
        #: The served engine's registry key (an alias naming another engine is refused; ``None``: unchecked).
        self.engine_key = engine_key
        self.settings = settings if settings is not None else ServerSettings()
        self.engine = engine
        self.model = model
        self.config = config
        self.registry = registry
        self.runs: Dict[str, RunTask] = {}

    async def start(self) -> None:
        """At startup: recover what a previous process left running."""
        await self.store.call(self.store.recover)

    async def stop(self) -> None:
        """At shutdown: cancel the runs still going (each records itself as cancelled)."""
        runs = list(self.runs.values())
        for run in runs:
            run.cancel()
        for run in runs:
            if run.task is not None:
                try:
                    await run.task
                except BaseException:  # each run records its own outcome
                    continue

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    # -- building agents ------------------------------------------------------------------------------
    def keeps_memory(self, agent_type: str) -> bool:
        """Whether agents of ``agent_type`` keep memory in stores they are given (the class's
        ``accepts_stores``); the registry's errors for an unknown or broken type propagate."""
        from jarvis_core.plugins.registry import get_registry

        registry = self.registry if self.registry is not None else get_registry()
        return bool(getattr(registry.get("agent", agent_type).load(), "accepts_stores", False))

    def build_agent(self, agent_type: str, config: Mapping[str, Any], *, agent_id: Optional[str] = None,
                    run_id: Optional[str] = None) -> Any:
        """The agent ``agent_type`` configured by ``config`` (blocking: call it in a worker thread). An agent
        that keeps memory gets the server's stores, ``agent_id`` as its operator id and appends as ``run_id``."""
        from jarvis_core.agents.factory import create_agent
        from jarvis_core.tools.factory import create_tool

        if not isinstance(config, Mapping):
            raise RequestError("config must be a JSON object", param="config")
        self.check_allowed(agent_type, config)
        tool_keys = _str_list(config, "tools")
        approved = _str_list(config, "approved_tools")
        stray = sorted(set(approved) - set(tool_keys))
        if stray:
            raise RequestError(f"config.approved_tools names tool(s) the agent does not use: {', '.join(stray)}",
                               param="config.approved_tools")
        requested = config.get("model")
        if requested is not None and not isinstance(requested, str):
            raise RequestError("config.model must be a string", param="config.model")
        configured, alias = agent_model(self.config, self.engine_key, agent_type, requested or None,
                                        param="config.model")
        model = configured or self.model
        tools = [off_the_loop(create_tool(k, config=self.config, registry=self.registry, engine=self.engine,
                                          model=model)) for k in tool_keys]
        options = {k: v for k, v in config.items() if k not in OWN_KEYS}
        if alias is not None:  # the alias's options under the config's own
            temperature, max_tokens, options = apply_alias_options(
                alias, options.pop("temperature", None), options.pop("max_tokens", None), options)
            options.update({k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens))
                            if v is not None})
        if tools:
            options["tools"] = tools
        if self.keeps_memory(agent_type):
            taken = [k for k in STORE_KEYS if k in options]
            if taken:
                raise RequestError(f"config.{taken[0]} is set by the server: a {agent_type} agent keeps its memory "
                                   "in the server's database, under its own managed-agent id",
                                   param=f"config.{taken[0]}")
            options.update(operator_id=agent_id or UNSAVED_ID, sessions=ServerSessionStore(self.store, run_id=run_id),
                           state=ServerStateStore(self.store))
        # On the default bus, which /metrics and the OpenTelemetry spans follow: runs and tool calls are counted.
        return create_agent(agent_type, self.engine, model=model, config=self.config, registry=self.registry,
                            approver=_approver(set(approved)), bus=default_bus(), **options)

    def check_allowed(self, agent_type: str, config: Mapping[str, Any]) -> None:
        """Refuse (403 naming it) an agent type, config key or tool the server's ``[server]`` allow-lists do
        not hold: they are the server's to grant, not the API client's."""
        settings = self.settings
        if not settings.allows("agent_types", agent_type):
            raise RequestError(f"agent type {agent_type!r} is not enabled on this server (its [server] agent_types "
                               "lists the agent types API clients may use)", status=403, param="agent_type",
                               code="agent_type_not_allowed")
        for key in config:
            if not settings.allows("agent_options", key):
                raise RequestError(f"config.{key} is the server's to set, not an API client's (its [server] "
                                   "agent_options lists the keys a client may set)", status=403,
                                   param=f"config.{key}", code="option_not_allowed")
        tools = config.get("tools")
        for name in tools if isinstance(tools, list) else ():
            if isinstance(name, str) and not settings.allows("tools", name):
                raise RequestError(f"tool {name!r} is not enabled on this server (its [server] tools lists the "
                                   "tools managed agents may use)", status=403, param="config.tools",
                                   code="tool_not_allowed")

    async def check(self, agent_type: str, config: Mapping[str, Any]) -> None:
        """Validate a type and config by building the agent; a 400 naming the problem otherwise."""
        try:
            await anyio.to_thread.run_sync(self.build_agent, agent_type, config)
        except RequestError:
            raise
        except Exception as exc:  # UnknownNameError, ConfigError, InvalidOptionError, InvalidToolError, TypeError
            from jarvis_core.errors import UnknownNameError

            param = "config"
            if isinstance(exc, UnknownNameError):
                param = "agent_type" if exc.kind == "agent" else "config.tools"
            raise RequestError(f"invalid agent: {exc}", param=param, code="invalid_agent") from None

    # -- the API's operations -------------------------------------------------------------------------
    async def get_agent(self, agent_id: str) -> Dict[str, Any]:
        """The agent ``agent_id``'s row, archived or not; 404 when there is none."""
        row = await self.store.call(self.store.get_agent, agent_id)
        if row is None:
            raise _not_found(agent_id)
        return row

    async def live_agent(self, agent_id: str) -> Dict[str, Any]:
        """The agent ``agent_id``'s row; 404 when there is none, 409 when it is archived."""
        row = await self.get_agent(agent_id)
        if row["status"] == "archived":
            raise RequestError(f"managed agent {agent_id!r} is archived", status=409, code="agent_archived")
        return row

    async def list_agents(self) -> List[Dict[str, Any]]:
        """The rows of the agents not archived."""
        return await self.store.call(self.store.list_agents)

    async def create_agent(self, new: NewAgent) -> Dict[str, Any]:
        """Check ``new`` (:meth:`check`) and store it: its row."""
        await self.check(new.agent_type, new.config)
        return await self.store.call(self.store.create_agent, new.name, new.agent_type, new.config)

    async def update_agent(self, agent_id: str, patch: AgentPatch) -> Dict[str, Any]:
        """Apply ``patch`` to a live agent, its type and merged config checked again: the updated row."""
        row = await self.live_agent(agent_id)
        agent_type = patch.agent_type or row["agent_type"]
        config = patch.merged(json.loads(row["config_json"]))
        await self.check(agent_type, config)
        updated = await self.store.call(self.store.update_agent, agent_id, name=patch.name, agent_type=agent_type,
                                        config=config)
        if updated is None:
            raise _not_found(agent_id)
        return updated

    async def archive_agent(self, agent_id: str) -> None:
        """Archive the agent; 404 when there is none."""
        if not await self.store.call(self.store.archive_agent, agent_id):
            raise _not_found(agent_id)

    async def run_pending(self, agent_id: str) -> Tuple[str, int]:
        """Start a run answering the agent's pending messages: its id and how many it answers. 409 when the
        agent is running or archived (decided atomically) or nothing is pending."""
        outcome, run_id, pending = await self.store.call(self.store.claim_agent, agent_id)
        if outcome == "missing":
            raise _not_found(agent_id)
        if outcome == "nothing_pending":
            raise RequestError(f"managed agent {agent_id!r} has no pending messages to answer (a streamed "
                               "message is answered by its own stream)", status=409, code="nothing_pending")
        if outcome != "ok" or run_id is None:
            raise RequestError(f"managed agent {agent_id!r} is {outcome}", status=409, code=f"agent_{outcome}")
        row = await self.get_agent(agent_id)
        text = "\n\n".join(m["content"] for m in pending)
        before = pending[0]["seq"] if pending else 2**62
        await self.launch(row, run_id=run_id, input=text, delivered=[m["id"] for m in pending], before=before,
                          release=True, stream=False)
        return run_id, len(pending)

    async def get_run(self, agent_id: str, run_id: str) -> Dict[str, Any]:
        """The run's row; 404 when the agent has no such run."""
        row = await self.store.call(self.store.get_run, agent_id, run_id)
        if row is None:
            raise RequestError(f"no run {run_id!r} of managed agent {agent_id!r}", status=404, code="run_not_found")
        return row

    async def cancel_run(self, agent_id: str, run_id: str) -> Dict[str, Any]:
        """Cancel a running run (streamed or not) and wait up to :data:`CANCEL_WAIT` seconds for it to record
        itself as cancelled: its row. 409 when it is not running."""
        row = await self.get_run(agent_id, run_id)
        running = self.runs.get(run_id)
        if running is None or running.task is None or running.task.done():
            raise RequestError(f"run {run_id!r} is not running (it is {row['status']})", status=409,
                               code="run_not_running")
        running.cancel()
        await asyncio.wait({running.task}, timeout=CANCEL_WAIT)
        after: Any = await self.store.call(self.store.get_run, agent_id, run_id)
        return after or row

    async def messages(self, agent_id: str, page: MessagePage) -> List[Dict[str, Any]]:
        """The agent's messages after ``page.after``, at most ``page.limit``; 404 when there is no agent."""
        await self.get_agent(agent_id)
        return await self.store.call(self.store.messages, agent_id, after=page.after, limit=page.limit)

    async def queue_message(self, agent_id: str, content: str) -> Dict[str, Any]:
        """Store a user message for the next run of a live agent: its row."""
        await self.live_agent(agent_id)
        return await self.store.call(self.store.add_message, agent_id, "user", content, status="pending")

    async def stream_message(self, agent_id: str, content: str) -> Tuple[RunTask, str]:
        """Store a user message and start the streamed run answering it: the run and the model it uses."""
        row = await self.live_agent(agent_id)
        message, run_id = await self.store.call(self.store.start_stream_run, agent_id, content)
        run = await self.launch(row, run_id=run_id, input=content, delivered=[message["id"]], before=message["seq"],
                                release=False, stream=True)
        return run, str(json.loads(row["config_json"]).get("model") or self.model)

    # -- runs -----------------------------------------------------------------------------------------
    async def _context(self, agent_id: str, before: int) -> AgentContext:
        rows = await self.store.call(self.store.history, agent_id, before=before)
        messages = [Message.user(r["content"]) if r["role"] == "user" else Message.assistant(r["content"])
                    for r in rows if r["content"]]
        return AgentContext(messages=messages)

    async def check_engine(self) -> None:
        """Raise :class:`~jarvis_core.errors.EngineConnectionError` (HTTP 503) when the engine does not answer
        its health probe."""
        from jarvis_core.errors import EngineConnectionError

        if not await anyio.to_thread.run_sync(self.engine.health):
            engine_id = getattr(self.engine, "engine_id", "") or type(self.engine).__name__
            raise EngineConnectionError(f"the engine {engine_id!r} is not answering; try again when it is up "
                                        "(GET /health says when)", engine_id=engine_id)

    async def launch(self, row: Dict[str, Any], *, run_id: str, input: str, delivered: List[str], before: int,
                     release: bool, stream: bool) -> RunTask:
        """Build the stored agent and start its run. If building fails, or a streamed run's engine does not
        answer its health probe, the run is recorded as failed and the error raised."""
        config = json.loads(row["config_json"])
        try:
            agent = await anyio.to_thread.run_sync(
                functools.partial(self.build_agent, row["agent_type"], config, agent_id=row["id"], run_id=run_id))
            if stream and getattr(agent, "uses_engine", True):
                await self.check_engine()  # a 503 before the stream starts, not a 200 and an error event
        except Exception as exc:  # re-raised below: the route's error response logs it
            await self.store.call(self.store.finish_run, run_id, row["id"], status="failed", answer=None,
                                  tool_calls=None, delivered=(), stop_reason=None,
                                  error=run_error(exc, f"building the agent of run {run_id}", logged=True),
                                  usage=None, release=release)
            raise
        # An agent keeping its own session loads its history itself; the listing would repeat it.
        context = AgentContext() if getattr(agent, "accepts_stores", False) else await self._context(row["id"], before)
        run = RunTask(self.store, agent, agent_id=row["id"], run_id=run_id, input=input, context=context,
                      delivered=delivered, release=release, stream=stream, agent_type=row["agent_type"],
                      registry=self.registry).start()
        self.runs[run_id] = run
        assert run.task is not None
        run.task.add_done_callback(lambda _t: self.runs.pop(run_id, None))
        return run


def open_service(engine: InferenceEngine, *, model: str, path: Optional[str] = None, config: Any = None,
                 settings: Optional[ServerSettings] = None, engine_key: Optional[str] = None) -> ManagedAgents:
    """The service with its database at ``path`` (default ``agents.db`` in the jarvis home), under the
    ``[server]`` allow-lists ``settings``."""
    from jarvis_core.config.paths import jarvis_home

    db = pathlib.Path(path).expanduser() if path else jarvis_home() / "agents.db"
    return ManagedAgents(Store.open(db), engine, model=model, config=config, settings=settings,
                         engine_key=engine_key)
