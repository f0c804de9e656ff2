"""The plugin registers the ``ollama`` engine and its config section, lazily."""

from __future__ import annotations

import subprocess
import sys

from jarvis_core.engine.factory import engine_class
from jarvis_core.plugins import get_registry
from jarvis_engine_ollama.config import OllamaConfig
from jarvis_engine_ollama.engine import OllamaEngine


def test_registry_has_the_engine_and_config_section():
    reg = get_registry()
    engine = reg.get("engine", "ollama")
    assert engine.distribution == "jarvis-engine-ollama"
    assert engine.target == "jarvis_engine_ollama.engine:OllamaEngine"
    assert reg.get("config_section", "engine.ollama").target == "jarvis_engine_ollama.config:OllamaConfig"
    assert engine_class("ollama") is OllamaEngine
    assert reg.load("config_section", "engine.ollama") is OllamaConfig


def test_config_fields_are_engine_keywords():
    import inspect

    import attrs

    params = inspect.signature(OllamaEngine.__init__).parameters
    assert all(f.name in params for f in attrs.fields(OllamaConfig))


def test_plugin_module_imports_no_engine_code():
    code = (
        "import sys, jarvis_engine_ollama.plugin; "
        "bad = [m for m in ('httpx', 'jarvis_engine_ollama.engine', 'jarvis_core.engine.http') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
