"""``jarvis ask --agent prompt_driven --prompt-provider …`` with the installed registry: the agent comes from the
core's ``core-prompts`` entry point, the provider from jarvis-prompts-qwen, the engine is the real llamacpp
engine of jarvis-engine-openai-compat talking to a loopback server that replays a Qwen model's replies, and
the tool is jarvis-agents' calculator. No scripted engine object: every request goes over HTTP and is checked.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from jarvis_core.cli.main import main
from jarvis_core.testing import Exchange, ReplayServer

pytest.importorskip("jarvis_engine_openai_compat", reason="the llamacpp engine is in jarvis-engine-openai-compat")
pytest.importorskip("jarvis_agents", reason="the calculator tool is in jarvis-agents")
pytest.importorskip("jarvis_prompts_qwen", reason="the provider is in jarvis-prompts-qwen")

pytestmark = pytest.mark.usefixtures("real_registry")  # every installed plugin, a private jarvis home

#: llama.cpp's /props for a template that renders tools (a Qwen model): tool history goes to the template as is.
PROPS = {"chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}


def _chat_bodies(server: ReplayServer) -> List[Dict[str, Any]]:
    return [r.json for r in server.requests if r.path == "/v1/chat/completions"]


def test_the_core_registers_the_prompt_driven_agent(real_registry):
    reg = real_registry.get("agent", "prompt_driven")
    assert reg.plugin == "core-prompts" and reg.distribution == "jarvis-core"


def test_lazy_qwen_drives_a_tool_loop_from_the_cli(capsys, chat_reply):
    fetch = '<tool_call>\n{"name": "get_tools", "arguments": {"names": ["calculator"]}}\n</tool_call>'
    use = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12*7"}}\n</tool_call>'
    replies = [Exchange("GET", "/props", json=PROPS), chat_reply(fetch), chat_reply(use), chat_reply("It is 84.")]
    with ReplayServer(replies) as server:
        code = main(["ask", "--engine", "llamacpp", "--host", server.url, "--model", "qwen2.5-14b-instruct",
                     "--agent", "prompt_driven", "--prompt-provider", "Qwen25_14B_Untrained", "--tools", "calculator",
                     "what is 12 times 7?"])
        out = capsys.readouterr()
        assert code == 0, out.err
        assert out.out == "It is 84.\n"
        assert server.unmatched == []
        first, second, third = _chat_bodies(server)
    system = first["messages"][0]["content"]
    assert "call get_tools" in system and '"name":"get_tools"' in system and '"name":"calculator"' not in system
    assert "tools" not in first and first["response_format"] == {"type": "text"}
    fetched, answered = second["messages"][2], second["messages"][3]
    assert fetched["tool_calls"][0]["function"]["name"] == "get_tools"
    definitions = json.loads(answered["content"])["tools"]
    assert answered["role"] == "tool" and [d["function"]["name"] for d in definitions] == ["calculator"]
    assert "unknown tool" not in answered["content"]
    ran = third["messages"][-1]
    assert ran["role"] == "tool" and ran["name"] == "calculator" and ran["content"] == "84"


def test_forced_qwen_is_asked_again_from_the_cli(capsys, tmp_path, chat_reply):
    commands = tmp_path / "commands.json"
    commands.write_text(json.dumps([{"command_name": "calculator", "allow_direct_answer": False}]), encoding="utf-8")
    use = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n</tool_call>'
    with ReplayServer([chat_reply("Probably 42.", streamed=False), chat_reply(use, streamed=False)]) as server:
        code = main(["ask", "--engine", "llamacpp", "--host", server.url, "--model", "qwen2.5-7b-instruct",
                     "--prompt-provider", "Qwen25Compressed", "--tools", "calculator", "--commands", str(commands),
                     "6 times 7?"])
        out = capsys.readouterr()
        assert code == 0, out.err
        first, second = _chat_bodies(server)
    assert out.out == 'tool call: calculator {"expression": "6*7"}\n'
    assert "Always call, never answer from memory: calculator" in first["messages"][0]["content"]
    assert second["messages"][-2] == {"role": "assistant", "content": "Probably 42."}
    assert second["messages"][-1]["role"] == "user" and "without calling a tool" in second["messages"][-1]["content"]


def test_prompt_driven_without_a_provider_and_commands_without_one_are_clear_errors(capsys, tmp_path):
    with ReplayServer([]) as server:
        assert main(["ask", "--engine", "llamacpp", "--host", server.url, "--model", "m", "--agent", "prompt_driven",
                     "hi"]) == 1
        assert server.requests == []  # refused before any request
    err = capsys.readouterr().err
    assert err.startswith("jarvis: error: agent 'prompt_driven' is driven by a prompt provider") and "--prompt-provider" in err
    assert main(["ask", "--commands", "c.json", "hi"]) != 0  # a usage error (its exit code is the CLI's)
    assert "--commands are read by a prompt provider; add --prompt-provider NAME" in capsys.readouterr().err
    bad = tmp_path / "c.json"
    bad.write_text('{"command_name": "x"}', encoding="utf-8")
    assert main(["ask", "--prompt-provider", "Qwen25Compressed", "--commands", str(bad), "hi"]) == 1
    assert "--commands" in capsys.readouterr().err
