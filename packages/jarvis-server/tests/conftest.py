"""Fixtures: a real uvicorn server on a free loopback port, in a background thread, over any engine."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pytest

from jarvis_server.app import create_app
from jarvis_server.running import BackgroundServer


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
