"""Host resolution: the default, OLLAMA_HOST in Ollama's own forms, and precedence."""

from __future__ import annotations

import pytest

from jarvis_core.engine.factory import create_engine
from jarvis_core.errors import ConfigError
from jarvis_engine_ollama.engine import OllamaEngine
from jarvis_engine_ollama.host import DEFAULT_HOST, host_from_environment, resolve_host


@pytest.mark.parametrize(
    ("value", "url"),
    [
        (None, "http://localhost:11434"),
        ("", "http://localhost:11434"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        (":11434", "http://127.0.0.1:11434"),
        (":8000", "http://127.0.0.1:8000"),
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:9999", "http://gpu-box:9999"),
        ("10.0.0.5", "http://10.0.0.5:11434"),
        ("http://gpu-box", "http://gpu-box:80"),
        ("https://ollama.example.com", "https://ollama.example.com:443"),
        ("https://ollama.example.com:8443/ollama/", "https://ollama.example.com:8443/ollama"),
        ("HTTP://Gpu-Box:11434/", "http://Gpu-Box:11434"),
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("[::]:11434", "http://[::1]:11434"),
        ("::", "http://[::1]:11434"),
        ("[fe80::1]:8080", "http://[fe80::1]:8080"),
        ("::1", "http://[::1]:11434"),
        ('  "gpu-box:11434"  ', "http://gpu-box:11434"),
        ("'0.0.0.0'", "http://127.0.0.1:11434"),
    ],
)
def test_resolve_host_forms(value, url):
    assert resolve_host(value) == url


@pytest.mark.parametrize("value", ["gpu-box:abc", "gpu-box:70000", "ftp://gpu-box", "[::1", "[::1]x"])
def test_resolve_host_rejects_bad_values(value):
    with pytest.raises(ConfigError) as info:
        resolve_host(value, source="OLLAMA_HOST")
    assert "OLLAMA_HOST" in str(info.value)


def test_environment_is_used_only_when_no_host_is_given(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:12345")
    assert OllamaEngine().base_url == "http://127.0.0.1:12345"
    assert OllamaEngine(host="other:1").base_url == "http://other:1"
    assert OllamaEngine(base_url="https://proxy/ollama").base_url == "https://proxy:443/ollama"
    monkeypatch.setenv("OLLAMA_HOST", "   ")
    assert OllamaEngine().base_url == DEFAULT_HOST
    monkeypatch.delenv("OLLAMA_HOST")
    assert OllamaEngine().base_url == DEFAULT_HOST


def test_create_engine_alone_honours_ollama_host(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box")
    with create_engine("ollama") as engine:
        assert isinstance(engine, OllamaEngine)
        assert engine.base_url == "http://gpu-box:11434"


def test_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:port")
    with pytest.raises(ConfigError, match="OLLAMA_HOST"):
        OllamaEngine()


def test_host_from_environment_mapping():
    assert host_from_environment({}) is None
    assert host_from_environment({"OLLAMA_HOST": "h:1"}) == "http://h:1"
