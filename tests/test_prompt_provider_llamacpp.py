"""``jarvis ask --prompt-provider qwen25mediumuntrained --tools calculator`` against a REAL llama.cpp server
(xllamacpp hosting SmolLM2-135M), through a loopback proxy that records what jarvis sent.

Asserts the plumbing, not the model's skill: the request carries the provider's system prompt and its
plain-text response format and no native tools, and whatever SmolLM2 writes is read into Jarvis JSON
without an error. The ``calculator`` tool is the installed one when a tools plugin provides it, else a tool
defined here and registered in-process.
"""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from jarvis_core.cli.main import main
from jarvis_core.plugins.registry import get_registry, reset_registry
from jarvis_core.prompts import JarvisReply, PromptSession, get_provider
from jarvis_core.testing import RecordingProxy, installed_registry, simple_plugin
from jarvis_core.types import ToolSpec

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]

QUESTION = "What is 12 times 7?"


class Calculator:
    """A calculator tool for this test (used only when no installed plugin registers ``calculator``)."""

    spec = ToolSpec("calculator", "Evaluate an arithmetic expression such as 12*7",
                    {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]})

    def run(self, expression: str) -> str:
        raise AssertionError("text mode without an agent must not run tools")


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    pytest.importorskip("xllamacpp", reason="the real llama.cpp server needs xllamacpp")
    launch = pytest.importorskip("jarvis_engine_openai_compat.server.launch")
    try:
        path = launch.smollm2_model_path()
    except Exception as exc:  # the model package is missing: say how to get it
        pytest.skip(str(exc))
    with launch.ServerProcess(launch.ServerSpec(path, slots=1, ctx_per_slot=4096, threads=2, alias="smollm2")).start() as server:  # stopped on leaving
        server.wait_ready(timeout=180)
        yield server.url


@pytest.fixture
def recording_proxy(llama_url: str) -> Iterator[RecordingProxy]:
    """A loopback proxy to the server that keeps every request (method, path, JSON body)."""
    with RecordingProxy(llama_url) as proxy:
        yield proxy


@pytest.fixture
def calculator_registry(monkeypatch, tmp_path):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    reset_registry()
    if "calculator" in get_registry().items("tool"):
        yield get_registry()
    else:
        with installed_registry(simple_plugin("test-calculator", tools={"calculator": Calculator}),
                                load_entrypoints=True) as registry:
            yield registry
    reset_registry()


def test_ask_with_a_qwen_provider_drives_smollm2(recording_proxy, calculator_registry, capsys):
    code = main(["ask", "--engine", "llamacpp", "--host", recording_proxy.url, "--model", "smollm2",
                 "--prompt-provider", "qwen25mediumuntrained", "--tools", "calculator", "--temperature", "0",
                 "--max-tokens", "96", "--json", QUESTION])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (request,) = [r for r in recording_proxy.seen if r["path"] == "/v1/chat/completions"]
    body = request["json"]
    tool = calculator_registry.load("tool", "calculator")
    tool = tool() if isinstance(tool, type) else tool
    expected = PromptSession(get_provider("Qwen25MediumUntrained"), [tool]).system_prompt
    assert body["messages"] == [{"role": "system", "content": expected}, {"role": "user", "content": QUESTION}]
    assert '"name":"calculator"' in expected and "<tool_call>" in expected
    assert body["response_format"] == {"type": "text"}
    assert "tools" not in body

    result = json.loads(captured.out)
    assert result["prompt_provider"] == "Qwen25MediumUntrained" and result["engine"] == "llamacpp"
    reply = JarvisReply.from_object(result["jarvis_json"])
    assert reply is not None and reply.message == result["content"]
    assert [c.name for c in reply.tool_calls] == [c["name"] for c in result.get("tool_calls", [])]


def test_ask_with_tool_schemas_from_a_file_and_a_llama_provider_drives_smollm2(recording_proxy, capsys, tmp_path,
                                                                                monkeypatch):
    """``--tools tools.json``: the caller's own schemas (no registered tool behind them) go into the prompt of a
    provider from jarvis-prompts-families; SmolLM2's reply is read without an error."""
    pytest.importorskip("jarvis_prompts_families", reason="the provider is in jarvis-prompts-families")
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    reset_registry()
    schemas = [{"type": "function", "function": {
        "name": "open_garage", "description": "Open the garage door",
        "parameters": {"type": "object", "properties": {"door": {"type": "string", "description": "which door",
                                                                  "enum": ["left", "right"]}}, "required": ["door"]}}}]
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(schemas), encoding="utf-8")
    try:
        code = main(["ask", "--engine", "llamacpp", "--host", recording_proxy.url, "--model", "smollm2",
                     "--prompt-provider", "Llama31MediumUntrained", "--tools", str(tools), "--temperature", "0",
                     "--max-tokens", "64", "--json", "open the left garage door"])
    finally:
        reset_registry()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (request,) = [r for r in recording_proxy.seen if r["path"] == "/v1/chat/completions"]
    body = request["json"]
    expected = PromptSession(get_provider("Llama31MediumUntrained"), schemas).system_prompt
    assert body["messages"][0] == {"role": "system", "content": expected}
    assert '"name":"open_garage"' in expected and "<function=example_function_name>" in expected
    assert body["response_format"] == {"type": "text"} and "tools" not in body
    result = json.loads(captured.out)
    assert result["prompt_provider"] == "Llama31MediumUntrained"
    assert result["jarvis_json"]["error"] is None or "cut off" in result["jarvis_json"]["error"]
