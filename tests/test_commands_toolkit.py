"""The plugin command of docs/plugins.md, written with the public toolkit ``jarvis_core.commands``, runs as a
``jarvis`` subcommand: a table by default, JSON with ``--json``/``--indent``, announcements on stderr.

Also: no distribution's source imports the CLI's private command modules (``jarvis_core.cli.*``); the
toolkit is the one way in.
"""

from __future__ import annotations

import json
import pathlib
import re
import types

from jarvis_core import hookimpl
from jarvis_core.cli.main import main
from jarvis_core.testing import installed_registry

ROOT = pathlib.Path(__file__).resolve().parent.parent


def docs_command() -> types.ModuleType:
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# jarvis_acme/cmd\.py.*?)```", text, re.S)
    assert code, "the command example is missing from docs/plugins.md"
    module = types.ModuleType("jarvis_acme_cmd")
    exec(compile(code.group(1), "docs/plugins.md", "exec"), module.__dict__)
    return module


class AcmePlugin:
    jarvis_plugin_name = "acme"

    @staticmethod
    @hookimpl
    def jarvis_register_commands(register):
        register("acme-status", docs_command(), description="show the acme servers")


def test_the_documented_command_prints_a_table_json_and_announces(capsys):
    with installed_registry(AcmePlugin):
        assert main(["acme-status", "--tools", "calculator, web_fetch"]) == 0
        out, err = capsys.readouterr()
        assert out.splitlines() == ["NAME  HEALTHY  MODELS", "eu-1  yes      m1,m2", "us-1  no       -"]
        assert err == "jarvis: checking tools: calculator, web_fetch\n"
        assert main(["acme-status", "--indent", "0"]) == 0
        out = capsys.readouterr().out
    assert out.count("\n") == 1 and json.loads(out)[0] == {"name": "eu-1", "healthy": True, "models": ["m1", "m2"]}


def test_no_plugin_imports_the_clis_private_modules():
    offenders = []
    for path in sorted(ROOT.glob("packages/*/src/**/*.py")):
        if "jarvis-core/src/jarvis_core/" in path.as_posix():
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bfrom jarvis_core\.cli\b|\bimport jarvis_core\.cli\b|from jarvis_core import cli\b", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []
