"""``jarvis ask --prompt-provider NAME --tools tools.json``: the caller's own tool schemas, read from a file,
go into the provider's prompt and the calls the model makes are printed, not run. The engine is the real
llamacpp engine talking to a loopback server that replays a Llama 3.1 reply; the provider comes from the
installed jarvis-prompts-families."""

from __future__ import annotations

import json

import pytest

from jarvis_core.cli.main import main
from jarvis_core.testing import ReplayServer

pytest.importorskip("jarvis_engine_openai_compat", reason="the llamacpp engine is in jarvis-engine-openai-compat")
pytest.importorskip("jarvis_prompts_families", reason="the provider is in jarvis-prompts-families")

SCHEMAS = [{"type": "function", "function": {
    "name": "open_garage", "description": "Open the garage door",
    "parameters": {"type": "object", "properties": {"door": {"type": "string", "enum": ["left", "right"]}},
                   "required": ["door"]}}},
    {"name": "close_garage", "description": "Close the garage door", "parameters": {"type": "object", "properties": {}}}]


pytestmark = pytest.mark.usefixtures("real_registry")  # every installed plugin, a private jarvis home


def test_tool_schemas_from_a_file_reach_the_prompt_and_calls_are_printed(capsys, tmp_path, chat_reply):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(SCHEMAS), encoding="utf-8")
    with ReplayServer([chat_reply('<function=open_garage>{"door": "left"}</function>', streamed=False)]) as server:
        code = main(["ask", "--engine", "llamacpp", "--host", server.url, "--model", "llama-3.1-8b-instruct",
                     "--prompt-provider", "Llama31MediumUntrained", "--tools", str(tools), "open the left garage"])
        out = capsys.readouterr()
        assert code == 0, out.err
        (body,) = [r.json for r in server.requests if r.path == "/v1/chat/completions"]
    system = body["messages"][0]["content"]
    assert '"name":"open_garage"' in system and '"name":"close_garage"' in system and '"enum":["left","right"]' in system
    assert "tools" not in body  # text mode: the schemas are in the prompt only
    assert out.out == 'tool call: open_garage {"door": "left"}\n'


def test_a_tools_file_needs_a_provider_and_no_agent_and_must_hold_schemas(capsys, tmp_path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(SCHEMAS), encoding="utf-8")
    assert main(["ask", "--tools", str(tools), "hi"]) != 0
    assert "tool schemas from a file describe your own tools to a prompt provider" in capsys.readouterr().err
    assert main(["ask", "--prompt-provider", "HermesMediumUntrained", "--agent", "prompt_driven", "--tools",
                 str(tools), "hi"]) != 0
    assert "have no implementation for agent 'prompt_driven' to run" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"description": "no name"}]), encoding="utf-8")
    assert main(["ask", "--prompt-provider", "HermesMediumUntrained", "--tools", str(bad), "hi"]) == 1
    err = capsys.readouterr().err
    assert f"--tools {bad}: tool #1 is not a function schema" in err
    assert main(["ask", "--prompt-provider", "HermesMediumUntrained", "--tools", str(tmp_path / "missing.json"),
                 "hi"]) == 1
    assert "cannot read it" in capsys.readouterr().err
    assert main(["chat", "--tools", str(tools)]) != 0
    assert "are for 'jarvis ask --prompt-provider'" in capsys.readouterr().err
