"""``max_connections`` / ``max_keepalive_connections`` in ``[engine.<key>]`` reach the pools of every
installed HTTP engine (ollama, the openai-compat family, cloud's providers), built from the config file the
way ``jarvis ask`` builds them."""

from __future__ import annotations

import pathlib

import pytest

from jarvis_core.config import load_config
from jarvis_core.discovery import get_engine


@pytest.mark.parametrize("key", ["ollama", "llamacpp", "vllm"])
def test_the_settings_reach_the_engines_pool_limits(tmp_path: pathlib.Path, key: str) -> None:
    # Both clients are built from pool_limits (tests/test_engine_pool.py shows each path keeps to them).
    path = tmp_path / "config.toml"
    path.write_text(f'[engine.{key}]\nhost = "http://127.0.0.1:9"\nmax_connections = 12\n'
                    "max_keepalive_connections = 4\n")
    engine = get_engine(load_config(path, environ={}), key)
    assert (engine.pool_limits.max_connections, engine.pool_limits.max_keepalive_connections) == (12, 4)
    engine.close()


def test_cloud_passes_them_to_each_provider(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[engine.cloud]\nmax_connections = 30\n")
    config = load_config(path, environ={})
    engine = get_engine(config, "cloud", anthropic_api_key="sk-ant-test-000000", environ={})
    limits = engine.client("anthropic").pool_limits
    assert (limits.max_connections, limits.max_keepalive_connections) == (30, 30)  # keep-alive follows
    engine.close()
