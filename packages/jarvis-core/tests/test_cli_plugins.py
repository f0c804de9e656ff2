"""``jarvis plugins``: the table and the ``--json`` document (in process, over in-process plugins), ``--hook``,
errors, and the real command in a subprocess over the installed plugins, importing nothing heavy."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from jarvis_core import __version__, hookimpl
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
        code, captured = run_plugins(capsys, "--json")
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


def test_table_has_a_row_per_plugin_summarising_what_it_registers(capsys):
    with installed_registry(PartsPlugin(), simple_plugin("tools-only", tools={"t": "pkg.tools:T"})):
        code, captured = run_plugins(capsys)
    assert code == 0 and captured.err == ""
    lines = captured.out.splitlines()
    assert lines[0].split() == ["PLUGIN", "DISTRIBUTION", "VERSION", "REGISTERS"]
    # In-process plugins have no version: "-".
    assert lines[1].split(None, 3) == ["parts", "parts", "-",
                                       "1 engine: e1; 1 parser: fmt; 2 backend-default rules: family-a, family-b"]
    assert lines[2].split(None, 3) == ["tools-only", "tools-only", "-", "1 tool: t"]
    assert lines[3:] == ["", "jarvis-core " + __version__ + "; 'jarvis plugins --json' adds hooks, modules and every target"]
    # Columns line up: every row's REGISTERS cell starts where the header's does.
    start = lines[0].index("REGISTERS")
    assert all(line[start - 2:start] == "  " and line[start] != " " for line in lines[1:3])


def test_table_names_the_first_keys_and_counts_the_rest(capsys):
    many = simple_plugin("many", engines={f"e{i}": f"pkg.e:E{i}" for i in range(5)})
    with installed_registry(many):
        assert "5 engines: e0, e1, e2, ..." in run_plugins(capsys)[1].out
        code, captured = run_plugins(capsys, "--hook", "jarvis_register_tools")
    assert code == 0
    assert captured.out.splitlines()[0] == "no loaded plugin implements jarvis_register_tools"


class BrokenPlugin:
    jarvis_plugin_name = "broken"

    @staticmethod
    @hookimpl
    def jarvis_register_tools(register):
        raise RuntimeError("tool table is corrupt")


def test_table_lists_failures_and_clashes_under_their_own_headings(capsys):
    plugins = (simple_plugin("twin-a", engines={"twin": "a:E"}), simple_plugin("twin-b", engines={"twin": "b:E"}),
               BrokenPlugin())
    with pytest.warns(Warning) as caught, installed_registry(*plugins, strict=False):
        code, captured = run_plugins(capsys)
    assert code == 0 and len(caught) == 2  # the failure and the clash, each one warning
    lines = captured.out.splitlines()
    # The clashing key is named on both plugins' rows; the failed plugin has no row of its own.
    assert [line.split(None, 3) for line in lines[1:3]] == [
        ["twin-a", "twin-a", "-", "clashing (unusable): engine twin"],
        ["twin-b", "twin-b", "-", "clashing (unusable): engine twin"],
    ]
    assert lines[3] == ""
    assert lines[4:7] == [
        "failed to load, not used (1):",
        "  PLUGIN  DISTRIBUTION  VERSION  ERROR",
        "  broken  broken        ?        RuntimeError: tool table is corrupt (in jarvis_register_tools)",
    ]
    clashes = lines.index("registered twice, unusable until one is removed or [plugins] prefer picks one (1):")
    assert lines[clashes + 1].split() == ["KIND", "KEY", "REGISTERED", "BY"]
    assert lines[clashes + 2].split(None, 2) == ["engine", "twin", "twin-a (twin-a), twin-b (twin-b)"]


def test_hook_filter_and_compact_output(capsys):
    with installed_registry(PartsPlugin(), simple_plugin("tools-only", tools={"t": "pkg.tools:T"})):
        code, captured = run_plugins(capsys, "--hook", "jarvis_register_tools", "--indent", "0")
        assert code == 0
        assert captured.out.count("\n") == 1  # --indent implies --json
        assert [p["name"] for p in json.loads(captured.out)["plugins"]] == ["tools-only"]
        code, captured = run_plugins(capsys, "--hook", "jarvis_register_tools", "--json")
    assert code == 0 and captured.out.startswith('{\n  "core_version": ')


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
        "code = main(['plugins', '--json'])\n"
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


def test_real_table_imports_nothing_heavy_and_names_switched_off_plugins():
    import os

    probe = (
        "import json, sys\n"
        "from jarvis_core.cli.main import main\n"
        "code = main(['plugins'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'httpcore', 'attr', 'attrs', 'cattrs')"
        " or m.startswith(('jarvis_core.config', 'jarvis_core.types', 'jarvis_core.cli.cmd_ask')))\n"
        "print(json.dumps({'code': code, 'heavy': heavy}))\n"
    )
    proc = _run(probe, env={**os.environ, "JARVIS_LOAD_PLUGINS": "core-parsers"})
    assert proc.returncode == 0, proc.stderr
    *table, verdict = proc.stdout.strip().splitlines()
    assert json.loads(verdict) == {"code": 0, "heavy": []}
    assert table[0].split() == ["PLUGIN", "DISTRIBUTION", "VERSION", "REGISTERS"]
    assert table[1].split(None, 3)[::2] == ["core-parsers", __version__]
    assert re.fullmatch(r"\d+ parsers: hermes, \w+, \w+, \.\.\.", table[1].split(None, 3)[3])
    switched_off = next(line for line in table if line.startswith("switched off by "))
    assert "core-defaults" in switched_off.split(": ", 1)[1].split(", ")


def test_import_jarvis_core_loads_no_httpx_and_no_plugin():
    probe = (
        "import sys, jarvis_core\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('httpx', 'httpcore') or m.startswith('jarvis_engine_')]\n"
        "print(bad)\n"
    )
    proc = _run(probe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_building_a_registry_with_plugin_commands_does_not_import_the_command_line():
    # The built-in command names the registry keeps plugins off come from a module that imports nothing.
    probe = (
        "import json, sys, warnings\n"
        "from jarvis_core import hookimpl\n"
        "from jarvis_core.plugins import Registry, make_plugin_manager\n"
        "class Commands:\n"
        "    @staticmethod\n"
        "    @hookimpl\n"
        "    def jarvis_register_commands(register):\n"
        "        register('plugins', 'acme.cli')\n"
        "        register('acme', 'acme.cli')\n"
        "warnings.simplefilter('ignore')\n"
        "registry = Registry(make_plugin_manager(load_entrypoints=False, plugins=[('acme-commands', Commands())]))\n"
        "print(json.dumps({'commands': sorted(registry.items('command')),"
        " 'clashes': [r.key for r in registry.builtin_clashes],"
        " 'cli': sorted(m for m in sys.modules if m.startswith('jarvis_core.cli'))}))\n"
    )
    proc = _run(probe)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "commands": ["acme"], "clashes": ["plugins"], "cli": ["jarvis_core.cli", "jarvis_core.cli.builtin_commands"]}
