"""The managed server's defaults have one source, and every place that takes them reads it."""

from __future__ import annotations

import inspect

import attrs
import pytest

from jarvis_core.errors import ConfigError
from jarvis_engine_openai_compat.config import EmbeddedConfig
from jarvis_engine_openai_compat.engines.embedded import EmbeddedEngine
from jarvis_engine_openai_compat.server.config import DEFAULTS, SMOLLM2_ALIAS, ServerConfig
from jarvis_engine_openai_compat.server.host import build_parser
from jarvis_engine_openai_compat.server.launch import ServerSpec
from jarvis_engine_openai_compat.worker import WorkerConfig

SHARED = ("slots", "ctx_per_slot", "threads", "max_tokens", "startup_timeout", "model_path", "binary_path")


def test_the_documented_defaults():
    assert (DEFAULTS.slots, DEFAULTS.ctx_per_slot, DEFAULTS.max_tokens, DEFAULTS.startup_timeout) == (1, 4096, 1024, 300.0)
    assert DEFAULTS.model_path is None and DEFAULTS.model_alias == SMOLLM2_ALIAS


def test_embedded_config_engine_and_worker_config_read_the_same_defaults():
    embedded = EmbeddedConfig()
    worker = WorkerConfig(model_path="m.gguf")
    params = inspect.signature(EmbeddedEngine.__init__).parameters
    for name in SHARED:
        assert getattr(embedded, name) == getattr(DEFAULTS, name), name
        assert params[name].default == getattr(DEFAULTS, name), name
        if name != "model_path":
            assert getattr(worker, name) == getattr(DEFAULTS, name), name
    assert isinstance(worker, ServerConfig)
    assert [f.name for f in attrs.fields(EmbeddedConfig)] == list(SHARED[5:] + SHARED[:5])


def test_server_spec_and_the_host_read_the_same_defaults():
    spec = ServerSpec("/m.gguf")
    assert (spec.slots, spec.ctx_per_slot) == (DEFAULTS.slots, DEFAULTS.ctx_per_slot)
    argv = spec.command(1)
    assert argv[argv.index("-c") + 1] == str(DEFAULTS.slots * DEFAULTS.ctx_per_slot)
    args = build_parser().parse_args(["-m", "/m.gguf"])
    assert args.parallel == DEFAULTS.slots and args.ctx_size is None  # None: slots x DEFAULTS.ctx_per_slot


def test_the_embedded_engine_checks_its_settings_through_the_server_config():
    engine = EmbeddedEngine(model_path="/models/qwen3-8b.GGUF", progress=False)
    assert engine.alias == "qwen3-8b" and engine.max_tokens == DEFAULTS.max_tokens
    with pytest.raises(ConfigError, match="ctx_per_slot") as info:
        EmbeddedEngine(ctx_per_slot=10)
    assert info.value.key == "ctx_per_slot"
