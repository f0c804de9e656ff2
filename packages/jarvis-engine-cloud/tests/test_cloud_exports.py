"""``jarvis_engine_cloud`` loads its names lazily: every name in its ``__all__`` resolves."""

from __future__ import annotations

import importlib

import pytest


def test_every_name_in_all_resolves():
    package = importlib.import_module("jarvis_engine_cloud")
    resolved = {name: getattr(package, name) for name in package.__all__}  # an ImportError fails the test too
    assert resolved["CloudEngine"].__module__ == "jarvis_engine_cloud.engine"
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        package.Nope  # noqa: B018
