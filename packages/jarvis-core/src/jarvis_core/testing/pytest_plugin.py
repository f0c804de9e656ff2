"""pytest fixtures of the jarvis testing kit. Enable them in a ``conftest.py``::

    pytest_plugins = ["jarvis_core.testing.pytest_plugin"]

``jarvis_plugins``
    A function ``install(*plugins, **options) -> Registry`` that installs a registry built from in-process
    plugins (see :func:`jarvis_core.testing.registry_with`) for this test; the previous registry is put
    back at teardown.
``jarvis_source_plugin``
    A function ``install(path, **options) -> Registry`` that installs a registry holding the installed
    plugins plus the plugin whose project (``pyproject.toml``) is at ``path``, loaded from source (see
    :func:`jarvis_core.testing.source_plugin`), for this test.
``replay_server``
    A function ``start(exchanges) -> ReplayServer`` returning a running server, stopped at teardown.
``jarvis_events``
    A fresh :class:`~jarvis_core.testing.RecordingBus`: pass it as ``bus=``; read ``bus.events``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import pytest

from jarvis_core.plugins.registry import Registry
from jarvis_core.testing.plugins import installed_registry
from jarvis_core.testing.recording_bus import RecordingBus
from jarvis_core.testing.replay import Exchange, ReplayServer
from jarvis_core.testing.source_checkout import source_plugin

__all__ = ["jarvis_events", "jarvis_plugins", "jarvis_source_plugin", "replay_server"]


@pytest.fixture
def jarvis_plugins() -> Iterator[Callable[..., Registry]]:
    with contextlib.ExitStack() as stack:

        def install(*plugins: Any, **options: Any) -> Registry:
            return stack.enter_context(installed_registry(*plugins, **options))

        yield install


@pytest.fixture
def jarvis_source_plugin() -> Iterator[Callable[..., Registry]]:
    with contextlib.ExitStack() as stack:

        def install(path: Any, **options: Any) -> Registry:
            return stack.enter_context(source_plugin(path, **options))

        yield install


@pytest.fixture
def replay_server() -> Iterator[Callable[..., ReplayServer]]:
    with contextlib.ExitStack() as stack:

        def start(exchanges: Sequence[Exchange] = ()) -> ReplayServer:
            return stack.enter_context(ReplayServer(exchanges))

        yield start


@pytest.fixture
def jarvis_events() -> RecordingBus:
    return RecordingBus()
