"""Model aliases: ``[aliases]`` read and checked, ``jarvis aliases set|list|remove`` editing the file in
place, and an alias resolving where a model is named: ``jarvis ask --model``, ``Jarvis(model=...)``, a
request's ``model=``, ``[engine] model``, with the alias's engine and options (explicit arguments win), and
``jarvis models`` listing them."""

from __future__ import annotations

import json

import pytest

from jarvis_core import Jarvis, hookimpl
from jarvis_core.cli.main import main
from jarvis_core.config import load_config
from jarvis_core.errors import ConfigError, UsageError
from jarvis_core.testing import FakeEngine, installed_registry


@pytest.fixture(autouse=True)
def home(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    monkeypatch.setenv("JARVIS_NO_LOG", "1")
    return tmp_path


def engines():
    """Two engine classes, ``one`` and ``two``, recording their instances."""
    made = {}

    def cls_for(key):
        class Engine(FakeEngine):
            def __init__(self, **options):
                super().__init__(default="ok", models=(f"{key}-default",), engine_id=key)
                made.setdefault(key, []).append(self)
        return Engine

    return made, {"one": cls_for("one"), "two": cls_for("two")}


def plugins(classes):
    class Plugin:
        jarvis_plugin_name = "alias-test"

        @staticmethod
        @hookimpl
        def jarvis_register_engines(register):
            for key, cls in classes.items():
                register(key, cls)

    return installed_registry(Plugin())


CONFIG = """\
# my config
[engine]
default = "one"

[aliases]
fast = "small-model"
smart = { model = "big-model", engine = "two", options = { temperature = 0.2, top_p = 0.9 } }
"""


def test_aliases_are_read_and_checked(home):
    (home / "config.toml").write_text(CONFIG)
    with plugins(engines()[1]):
        aliases = load_config().aliases
        assert aliases["fast"].to_dict() == {"model": "small-model"}
        assert aliases["smart"].to_dict() == {"model": "big-model", "engine": "two",
                                              "options": {"temperature": 0.2, "top_p": 0.9}}
        (home / "config.toml").write_text('[aliases]\nx = { modle = "m" }\n')
        with pytest.raises(ConfigError, match="modle"):
            load_config()
        (home / "config.toml").write_text('[aliases]\nx = { engine = "one" }\n')
        with pytest.raises(ConfigError, match=r"aliases\.x"):
            load_config()
        (home / "config.toml").write_text('[aliases]\nx = ""\n')
        with pytest.raises(ConfigError, match="must name a model"):
            load_config()


def test_ask_with_an_alias_uses_its_model_engine_and_options(home, capsys):
    (home / "config.toml").write_text(CONFIG)
    made, classes = engines()
    with plugins(classes):
        assert main(["ask", "--model", "smart", "q"]) == 0
        assert main(["ask", "--model", "smart", "--temperature", "0.7", "q"]) == 0
        assert main(["ask", "--model", "fast", "q"]) == 0
    first, second = (e.calls[0] for e in made["two"])
    assert (first.model, first.temperature, first.options) == ("big-model", 0.2, {"top_p": 0.9})
    assert second.temperature == 0.7  # the explicit argument beats the alias's option
    (plain,) = made["one"]  # an alias without an engine: the configured default engine
    assert plain.calls[0].model == "small-model"
    assert capsys.readouterr().out == "ok\nok\nok\n"


def test_explicit_engine_beats_the_alias_engine(home):
    (home / "config.toml").write_text(CONFIG)
    made, classes = engines()
    with plugins(classes):
        assert main(["ask", "--engine", "one", "--model", "smart", "q"]) == 0
    assert made["one"][0].calls[0].model == "big-model" and "two" not in made


def test_sdk_resolves_aliases_at_construction_per_request_and_in_the_config(home):
    (home / "config.toml").write_text(CONFIG.replace('default = "one"', 'default = "one"\nmodel = "fast"'))
    made, classes = engines()
    with plugins(classes):
        with Jarvis(model="smart") as j:
            assert j.ask("q") == "ok" and (j.engine_key, j.model) == ("two", "big-model")
        with Jarvis() as j:
            assert j.connect().model == "small-model"  # [engine] model names an alias
            j.ask("q", model="fast", temperature=0.1)
            with pytest.raises(UsageError, match="names engine 'two'"):
                j.ask("q", model="smart")
    assert made["one"][0].calls[0].model == "small-model" and made["one"][0].calls[0].temperature == 0.1


def test_aliases_command_edits_the_file_in_place(home, capsys):
    path = home / "config.toml"
    path.write_text("# keep me\n[engine]\ndefault = \"one\"  # and me\n")
    with plugins(engines()[1]):
        assert main(["aliases", "set", "fast", "small-model"]) == 0
        assert main(["aliases", "set", "smart", "big-model", "--engine", "two", "--option", "temperature=0.2",
                     "--option", "stop=[\"x\"]", "--option", "note=free text"]) == 0
        assert main(["aliases", "set", "fast", "other-model"]) == 0
        text = path.read_text()
        assert text.startswith("# keep me\n[engine]\ndefault = \"one\"  # and me\n")
        assert load_config().aliases["smart"].options == {"temperature": 0.2, "stop": ["x"], "note": "free text"}
        assert load_config().aliases["fast"].model == "other-model"
        capsys.readouterr()
        assert main(["aliases", "list", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["fast"] == {"model": "other-model"}
        assert main(["aliases"]) == 0
        table = capsys.readouterr().out.splitlines()
        assert table[0].split() == ["ALIAS", "MODEL", "ENGINE", "OPTIONS"] and len(table) == 3
        assert main(["aliases", "remove", "fast"]) == 0
        assert list(load_config().aliases) == ["smart"]
        assert main(["aliases", "remove", "fast"]) == 2
        assert "there is no alias 'fast'" in capsys.readouterr().err
        path.write_text(text + '\n[aliases.tabled]\nmodel = "m"\n')
        assert main(["aliases", "remove", "tabled"]) == 2
        assert "written as a table" in capsys.readouterr().err


def test_models_lists_the_aliases(home, capsys):
    (home / "config.toml").write_text(CONFIG)
    with plugins(engines()[1]):
        assert main(["models", "--engine", "one", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["aliases"]["smart"]["engine"] == "two" and doc["models"] == {"one": ["one-default"]}
        assert main(["models", "--engine", "one"]) == 0
        out = capsys.readouterr().out
        assert "ALIAS" in out and "big-model" in out
