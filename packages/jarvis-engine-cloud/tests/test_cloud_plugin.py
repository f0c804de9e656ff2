"""The plugin module: what it registers, lazily, and that the config schema matches the engine."""

from __future__ import annotations

import inspect
import subprocess
import sys

import attrs

from jarvis_core.engine.factory import create_engine
from jarvis_core.testing import installed_registry
from jarvis_engine_cloud import plugin
from jarvis_engine_cloud.config import CloudConfig
from jarvis_engine_cloud.engine import CloudEngine


def test_registers_a_non_discoverable_engine_and_a_config_section():
    with installed_registry(("jarvis_engine_cloud", plugin)) as registry:
        engine = registry.get("engine", "cloud")
        assert engine.target == "jarvis_engine_cloud.engine:CloudEngine"
        assert engine.extra.get("discoverable") is False, "cloud costs money: never probed unless configured"
        assert registry.load("engine", "cloud") is CloudEngine
        section = registry.get("config_section", "engine.cloud")
        assert section.target == "jarvis_engine_cloud.config:CloudConfig"
        made = create_engine("cloud", anthropic_api_key="sk-ant-xxxxxxxxxxxx", environ={})
        assert isinstance(made, CloudEngine) and made.health("openai") is False


def test_config_fields_are_engine_keyword_arguments_and_keys_are_hidden():
    params = inspect.signature(CloudEngine.__init__).parameters
    for field in attrs.fields(CloudConfig):
        assert field.name in params, f"[engine.cloud] {field.name} is not a CloudEngine argument"
    config = CloudConfig(openai_api_key="sk-config-secret-123456", max_retries=1)
    assert "sk-config-secret" not in repr(config)
    engine = CloudEngine(environ={}, **{f.name: getattr(config, f.name) for f in attrs.fields(CloudConfig)
                                        if getattr(config, f.name) is not None})
    assert engine.retry.max_retries == 1 and engine.providers() == ["openai"]


def test_plugin_module_imports_nothing_heavy():
    code = "import sys, jarvis_engine_cloud.plugin; print('httpx' in sys.modules, 'jarvis_engine_cloud.engine' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
