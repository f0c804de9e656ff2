"""``jarvis prompts …`` and ``jarvis defaults`` with the Qwen providers installed (the entry point of this
distribution is loaded, as for a user)."""

from __future__ import annotations

import json

import pytest

from jarvis_core.cli.main import main
from jarvis_core.plugins.registry import reset_registry
from jarvis_core.prompts import get_provider
from jarvis_prompts_qwen.plugin import PROVIDERS

TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "Evaluate arithmetic",
                                           "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}]


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch, tmp_path):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    for var in ("JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    yield
    reset_registry()


def test_list_shows_every_qwen_provider(capsys):
    assert main(["prompts", "list"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(PROVIDERS) <= set(rows)
    assert rows["Qwen3_5_9B_Compressed"][1:5] == ["qwen3.5", "medium", "untrained", "native"]
    assert rows["Qwen25MediumUntrained"][-1] == "jarvis-prompts-qwen"
    assert main(["prompts", "list", "--json"]) == 0
    docs = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert docs["Qwen3LargeUntrained"]["user_message_suffix"] == "/no_think"
    assert docs["Qwen3LargeUntrained"]["distribution"] == "jarvis-prompts-qwen"


def test_show_and_render(tmp_path, capsys):
    assert main(["prompts", "show", "QWEN25_14B_UNTRAINED", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["capabilities"]["lazy_tool_loading"] is True and doc["response_format"] == {"type": "text"}
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    context = tmp_path / "ctx.json"
    context.write_text(json.dumps({"room": "study", "user": "kim"}), encoding="utf-8")
    assert main(["prompts", "render", "qwen25mediumuntrained", "--tools", str(tools), "--context", str(context)]) == 0
    out = capsys.readouterr().out
    expected = get_provider("Qwen25MediumUntrained").build_system_prompt({"room": "study", "user": "kim"}, None, TOOLS)
    assert out == expected + "\n" and "room=study" in out and '"name":"calculator"' in out
    assert main(["prompts", "render", "Qwen3_5_9B_Compressed", "--tools", str(tools), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "native" and doc["request"]["tools"][0]["function"]["name"] == "calculator"
    tools.write_text("{not json", encoding="utf-8")
    assert main(["prompts", "render", "Qwen25MediumUntrained", "--tools", str(tools)]) == 1
    assert "--tools" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["Qwen25MediumUntrained", "Qwen3_8B_Compressed"])
def test_training_data_is_jsonl_of_system_user_assistant(name, tmp_path, capsys):
    pairs = [
        {"voice_command": "set a timer for five minutes", "tool_call": {"name": "set_timer", "arguments": {"duration_seconds": 300}}},
        {"voice_command": "what's the weather in Paris", "tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    ]
    source = tmp_path / "examples.jsonl"
    source.write_text("\n".join(json.dumps(p) for p in pairs) + "\n\n", encoding="utf-8")
    out_file = tmp_path / "train.jsonl"
    assert main(["prompts", "training-data", name.lower(), "--in", str(source), "--out", str(out_file)]) == 0
    assert "2 training example(s)" in capsys.readouterr().err
    provider = get_provider(name)
    examples = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert len(examples) == 2
    for example, pair in zip(examples, pairs, strict=True):
        roles = [m["role"] for m in example["messages"]]
        assert roles == ["system", "user", "assistant"]
        system, user, assistant = (m["content"] for m in example["messages"])
        assert system == provider.build_training_system_prompt()
        assert user.startswith(pair["voice_command"]) and user.endswith(provider.user_message_suffix)
        assert assistant == provider.build_training_completion(pair["tool_call"])
        assert json.loads(provider.parse_response(assistant))["tool_calls"] == [pair["tool_call"]]


def test_defaults_names_the_provider_and_the_distribution(capsys):
    from jarvis_core.cli.cmd_defaults import collect

    doc = collect("Qwen/Qwen2.5-7B-Instruct", use_config=False)
    assert doc["extras"]["prompt_provider"] == "Qwen25MediumUntrained"
    assert doc["provenance"]["extras.prompt_provider"] == {"pattern": "qwen2.5-7b", "distribution": "jarvis-prompts-qwen"}
    assert doc["provenance"]["tool_parser"]["distribution"] == "jarvis-core"  # parsers still from the core
    # The command shows both, whatever its layout (JSON or a table).
    assert main(["defaults", "Qwen/Qwen2.5-7B-Instruct", "--no-user-config"]) == 0
    out = capsys.readouterr().out
    assert "Qwen25MediumUntrained" in out and "jarvis-prompts-qwen" in out


@pytest.mark.parametrize("model, provider", [("Qwen/Qwen3-Coder-30B-A3B-Instruct", None),
                                             ("Qwen/Qwen3-235B-A22B", "Qwen3LargeUntrained"),
                                             ("Qwen/Qwen2.5-VL-7B-Instruct", None),
                                             ("Qwen/Qwen2.5-Coder-14B-Instruct", "Qwen25LargeUntrained")])
def test_defaults_for_the_family_variants(model, provider):
    from jarvis_core.cli.cmd_defaults import collect

    doc = collect(model, use_config=False)
    assert doc["extras"].get("prompt_provider") == provider
    if provider is None:  # auto then says so, naming the installed providers, instead of picking a wrong one
        from jarvis_core import Jarvis
        from jarvis_core.errors import JarvisError
        from jarvis_core.testing import FakeEngine

        engine = FakeEngine(allowed_options={"response_format"})
        with Jarvis(engine=engine, model=model) as j, pytest.raises(JarvisError, match="no backend-default rule names a "
                                                                     r"prompt provider .*installed: .*Qwen3_8B_Thinking"):
            j.ask("hi", prompt_provider="auto")
        assert engine.calls == []
