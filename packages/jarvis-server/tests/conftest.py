"""Fixtures: a real uvicorn server on a free loopback port, in a background thread, over any engine."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pytest

from jarvis_server.app import create_app
from jarvis_server.running import BackgroundServer
from jarvis_server.settings import ServerSettings

ANY = ServerSettings(agent_types=("*",), tools=("*",), agent_options=("*",))


@pytest.fixture
def serve() -> Iterator[Callable[..., BackgroundServer]]:
    """``serve(engine, **create_app_kwargs)`` -> a started :class:`BackgroundServer` (stopped at teardown)."""
    started: List[BackgroundServer] = []

    def factory(engine: Any, *, model: str = "fake-model", engine_key: str = "fake", **kwargs: Any) -> BackgroundServer:
        app = create_app(engine, engine_key=engine_key, model=model, **kwargs)
        server = BackgroundServer(app).start()
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def managed(tmp_path):
    """``managed(engine, db=None) -> (server, service)``: a real server with managed agents over ``engine``, its
    store in ``tmp_path`` (a new file each call, or the file ``db``: a restarted server on the same database),
    the registry holding the test agents and tools (restored afterwards)."""
    import importlib.util
    import pathlib

    from jarvis_core.plugins.manager import make_plugin_manager
    from jarvis_core.plugins.registry import Registry, reset_registry
    from jarvis_server.managed.service import ManagedAgents
    from jarvis_server.managed.store import Store

    spec = importlib.util.spec_from_file_location("managed_kit", pathlib.Path(__file__).with_name("managed_kit.py"))
    assert spec is not None and spec.loader is not None
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    kit.Sleepy.started.clear()
    kit.Sleepy.done.clear()
    registry = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("test-agents", kit.TestAgentsPlugin())]))
    reset_registry(registry)
    made: List[Any] = []

    def factory(engine: Any, *, model: str = "fake-model", db: Any = None, **kwargs: Any) -> Any:
        path = db if db is not None else tmp_path / f"agents-{len(made)}.db"
        # The test agents and tools are not on the [server] allow-lists' defaults: allow any (the lists are
        # tested against a real `jarvis serve` in test_hostile_clients).
        service = ManagedAgents(Store.open(path), engine, model=model, registry=registry, settings=ANY,
                                config=kwargs.get("config"), engine_key="fake")
        server = BackgroundServer(create_app(engine, engine_key="fake", model=model, managed=service,
                                             **{"settings": ANY, **kwargs})).start()
        made.append((server, service))
        return server, service

    factory.kit = kit  # type: ignore[attr-defined]
    yield factory
    for server, service in made:
        server.stop()
        service.close()
    reset_registry(None)
