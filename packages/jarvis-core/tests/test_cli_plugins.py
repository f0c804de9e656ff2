"""``jarvis plugins``: the JSON document (in process, over in-process plugins), ``--hook``, errors, and the
real command in a subprocess over the installed plugins, importing nothing heavy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jarvis_core import hookimpl
from jarvis_core.cli.main import main
from jarvis_core.testing import installed_registry
from jarvis_core.testing.plugins import simple_plugin


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for var in ("JARVIS_CONFIG", "JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_STRICT_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))


class PartsPlugin:
    """Registers one of nearly everything."""

    jarvis_plugin_name = "parts"

    @staticmethod
    @hookimpl
    def jarvis_register_engines(register):
        register("e1", "pkg.engines:E1", description="first engine", discoverable=False)

    @staticmethod
    @hookimpl
    def jarvis_register_parsers(register):
        register("fmt", "pkg.parsers:Fmt", kind="tool", aliases=("fmt2",))

    @staticmethod
    @hookimpl
    def jarvis_backend_defaults(register):
        register("family-a", tool_parser="fmt")
        register("family-b", sampling={"temperature": 0.5})


def run_plugins(capsys, *args):
    code = main(["plugins", *args])
    captured = capsys.readouterr()
    return code, captured


def test_document_lists_hooks_and_registrations(capsys):
    with installed_registry(PartsPlugin(), simple_plugin("tools-only", tools={"t": "pkg.tools:T"})):
        code, captured = run_plugins(capsys)
    assert code == 0 and captured.err == ""
    doc = json.loads(captured.out)
    assert doc["failures"] == [] and doc["skipped"] == []
    assert [p["name"] for p in doc["plugins"]] == ["parts", "tools-only"]
    parts = doc["plugins"][0]
    assert parts["hooks"] == ["jarvis_backend_defaults", "jarvis_register_engines", "jarvis_register_parsers"]
    assert parts["registered"] == {
        "engine": [{"key": "e1", "target": "pkg.engines:E1", "description": "first engine", "discoverable": False}],
        "parser": [{"key": "fmt", "target": "pkg.parsers:Fmt", "kind": "tool", "aliases": ["fmt2"]}],
        "backend_defaults": ["family-a", "family-b"],
    }
    # An in-process plugin reports its own name as distribution.
    assert parts["distribution"] == "parts" and parts["version"] == ""
    assert doc["plugins"][1]["registered"] == {"tool": [{"key": "t", "target": "pkg.tools:T"}]}


def test_hook_filter_and_compact_output(capsys):
    with installed_registry(PartsPlugin(), simple_plugin("tools-only", tools={"t": "pkg.tools:T"})):
        code, captured = run_plugins(capsys, "--hook", "jarvis_register_tools", "--indent", "0")
    assert code == 0
    assert captured.out.count("\n") == 1
    assert [p["name"] for p in json.loads(captured.out)["plugins"]] == ["tools-only"]


def test_unknown_hook_lists_the_hooks(capsys):
    with installed_registry(PartsPlugin()):
        code, captured = run_plugins(capsys, "--hook", "jarvis_register_engine")
    assert code == 1 and captured.out == ""
    assert captured.err.startswith("jarvis: error: unknown hook 'jarvis_register_engine'; available: ")
    assert "jarvis_register_engines" in captured.err


def test_duplicate_key_is_an_error_in_strict_mode(capsys):
    from jarvis_core.errors import DuplicateRegistrationError

    with pytest.raises(DuplicateRegistrationError, match=r"engine 'e' is registered by both a \(plugin 'a'\) and b"):
        with installed_registry(simple_plugin("a", engines={"e": "x:A"}), simple_plugin("b", engines={"e": "x:B"})):
            pass


def _run(code: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_real_command_lists_the_core_builtins_and_imports_nothing_heavy():
    probe = (
        "import json, sys\n"
        "from jarvis_core.cli.main import main\n"
        "code = main(['plugins'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'httpcore', 'attr', 'attrs', 'cattrs')"
        " or m.startswith(('jarvis_core.config', 'jarvis_core.types', 'jarvis_core.cli.cmd_ask')))\n"
        "print(json.dumps({'code': code, 'heavy': heavy}))\n"
    )
    proc = _run(probe)
    assert proc.returncode == 0, proc.stderr
    out_lines = proc.stdout.strip().splitlines()
    verdict = json.loads(out_lines[-1])
    assert verdict == {"code": 0, "heavy": []}
    doc = json.loads("\n".join(out_lines[:-1]))
    core = {p["name"]: p for p in doc["plugins"] if p["distribution"] == "jarvis-core"}
    assert set(core) == {"core-parsers", "core-defaults", "core-prompts"}
    assert all(p["version"] for p in core.values())


def test_import_jarvis_core_loads_no_httpx_and_no_plugin():
    probe = (
        "import sys, jarvis_core\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('httpx', 'httpcore') or m.startswith('jarvis_engine_')]\n"
        "print(bad)\n"
    )
    proc = _run(probe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
