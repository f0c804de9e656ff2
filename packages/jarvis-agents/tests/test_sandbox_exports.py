"""``jarvis_agents.sandbox`` loads its names lazily: every name in its ``__all__`` resolves."""

from __future__ import annotations

import importlib


def test_every_name_in_the_sandbox_all_resolves():
    sandbox = importlib.import_module("jarvis_agents.sandbox")
    resolved = {name: getattr(sandbox, name) for name in sandbox.__all__}  # an ImportError fails the test too
    assert all(value is not None for value in resolved.values())
    assert set(sandbox.__all__) <= set(dir(sandbox))
