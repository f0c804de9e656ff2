"""Plugin mistakes, each made by a real distribution pip-installed into one real venv, seen through the real
``jarvis`` command: isolated (everything else keeps working), named (key, plugin, distribution, version),
and never silent. Each test selects the plugins it exercises with ``JARVIS_LOAD_PLUGINS``.
"""

from __future__ import annotations

import json
import pathlib

import pytest

pytestmark = pytest.mark.slow

V = "0.1.0"
CORE = "core-parsers,core-defaults,engine-echo"

ENGINE_MODULE = """\
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_core.types import Completion

    class RaisingEngine(InferenceEngine):
        engine_id = "ctor-raises"

        def __init__(self, **options):
            raise RuntimeError("cannot open /dev/acme0")

        def generate(self, messages, *, model, **kw):
            return Completion("never")

        def list_models(self):
            return []

        def health(self):
            return False

    class NotAnEngine:
        pass

    class NoSpecTool:
        def run(self, **arguments):
            return "ok"

    from jarvis_core.agents import ToolUsingAgent

    class ToolUser(ToolUsingAgent):
        agent_id = "tooluser"

    class NotAParser:
        pass
"""

PLUGINS = {
    # name: (entry-point name, {module path: source})
    "exits": {"jarvis_plugin_exits/plugin.py": "import sys\nsys.exit(3)\n"},
    # What Ctrl-C during a slow import raises: it must stop the command, not be skipped like a broken plugin.
    "interrupted": {"jarvis_plugin_interrupted/plugin.py": "raise KeyboardInterrupt\n"},
    "slow": {
        "jarvis_plugin_slow/plugin.py": """\
            import time

            from jarvis_core import hookimpl

            time.sleep(1.3)  # e.g. importing a big SDK at module level

            @hookimpl
            def jarvis_register_tools(register):
                register("slowtool", "jarvis_plugin_slow.tool:Tool")
            """
    },
    "nohooks": {"jarvis_plugin_nohooks/plugin.py": "VERSION = 1\n"},
    "nohookimpl": {
        "jarvis_plugin_nohookimpl/plugin.py": """\
            def jarvis_register_engines(register):
                register("never", "jarvis_plugin_nohookimpl.plugin:Never")
            """
    },
    "typo": {
        "jarvis_plugin_typo/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_engine(register):
                register("typo", "jarvis_plugin_typo.plugin:Engine")
            """
    },
    "unknownhook": {
        "jarvis_plugin_unknownhook/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_widgets(register):
                register("w", "jarvis_plugin_unknownhook.plugin:Widget")
            """
    },
    "returns": {
        "jarvis_plugin_returns/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_engines(register):
                return {"returned": "jarvis_plugin_returns.engine:Engine"}
            """
    },
    "halfbad": {
        "jarvis_plugin_halfbad/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_engines(register):
                register("halfbad", "jarvis_plugin_halfbad.engine:Engine")

            @hookimpl
            def jarvis_register_tools(register):
                raise RuntimeError("tool table is corrupt")
            """
    },
    "usetime": {
        "jarvis_plugin_usetime/plugin.py": """\
            from jarvis_core import hookimpl

            M = "jarvis_plugin_usetime.things"

            @hookimpl
            def jarvis_register_engines(register):
                register("ctor-raises", M + ":RaisingEngine", discoverable=False)
                register("noimport", "jarvis_plugin_usetime.missing:Engine", discoverable=False)
                register("notengine", M + ":NotAnEngine", discoverable=False)

            @hookimpl
            def jarvis_register_tools(register):
                register("nospec", M + ":NoSpecTool")

            @hookimpl
            def jarvis_register_agents(register):
                register("tooluser", M + ":ToolUser")

            @hookimpl
            def jarvis_register_parsers(register):
                register("notaparser", M + ":NotAParser", kind="tool")

            @hookimpl
            def jarvis_backend_defaults(register):
                register("acme-llm", tool_parser="hermess")

            @hookimpl
            def jarvis_register_config_sections(register):
                register("acme", "jarvis_plugin_usetime.config:AcmeConfig")
            """,
        "jarvis_plugin_usetime/things.py": ENGINE_MODULE,
        "jarvis_plugin_usetime/config.py": """\
            import attrs

            @attrs.frozen
            class AcmeConfig:
                level: int = 1
                api_key: str = ""
            """,
    },
}


def _dist(name: str) -> str:
    return f"jarvis-plugin-{name}"


@pytest.fixture(scope="module")
def bad_venv(plugin_venv, plugin_project, example_echo_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("failure-projects")
    projects = [
        plugin_project(root, _dist(name), V, {name: f"jarvis_plugin_{name}.plugin"}, modules)
        for name, modules in PLUGINS.items()
    ]
    return plugin_venv("failures", [*projects, example_echo_project])


def _run(venv, *args, load: str, env=None):
    return venv.jarvis(*args, env={"JARVIS_LOAD_PLUGINS": f"{CORE},{load}", **(env or {})})


def _warnings(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("jarvis: warning: ")]


def test_sys_exit_at_import_is_isolated(bad_venv):
    proc = _run(bad_venv, "ask", "--engine", "echo", "still", "here", load="exits")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "still here\n"
    assert _warnings(proc) == [_failed("exits", "SystemExit: the plugin called sys.exit(3)")]


def test_ctrl_c_during_a_plugin_import_stops_the_command(bad_venv):
    proc = _run(bad_venv, "ask", "--engine", "echo", "never", "answered", load="interrupted")
    assert proc.returncode == 130, proc.stderr
    assert proc.stdout == ""
    assert "failed to load" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_slow_import_is_named(bad_venv):
    proc = _run(bad_venv, "plugins", "--json", load="slow")
    assert proc.returncode == 0, proc.stderr
    assert len(_warnings(proc)) == 1, proc.stderr
    [line] = _warnings(proc)
    assert line.startswith(f"jarvis: warning: jarvis plugin 'slow' from {_dist('slow')} {V} took 1.")
    assert line.endswith(
        " s to import, and every jarvis command pays for it (a plugin module should import only "
        "jarvis_core.hookimpl; disable it with JARVIS_DISABLE_PLUGINS=slow)"
    )
    assert "slow" in [p["name"] for p in json.loads(proc.stdout)["plugins"]]  # slow is not broken


def _failed(name: str, error: str) -> str:
    return (f"jarvis: warning: jarvis plugin '{name}' from {_dist(name)} {V} failed to load and was skipped: {error} "
            f"(disable it with JARVIS_DISABLE_PLUGINS={name}, or pip uninstall {_dist(name)})")


@pytest.mark.parametrize(
    ("name", "warning"),
    [
        ("nohookimpl", f"jarvis: warning: jarvis plugin 'nohookimpl' from {_dist('nohookimpl')} {V} defines "
                       "jarvis_register_engines without @hookimpl, so it is never called (from jarvis_core import hookimpl)"),
        ("nohooks", f"jarvis: warning: jarvis plugin 'nohooks' from {_dist('nohooks')} {V} implements no jarvis hook "
                    "(mark each hook function with @hookimpl); it does nothing"),
        # A near miss is a typo, not a version problem: no "newer core" blame.
        ("typo", _failed("typo", "implements jarvis_register_engine, which is not a jarvis hook; did you mean "
                                 "jarvis_register_engines?")),
        # Not a near miss and not a hook of any jarvis-core: no guess, and no blame on the core's version.
        ("unknownhook", _failed("unknownhook", "implements jarvis_register_widgets, which is not a jarvis hook")),
        ("returns", f"jarvis: warning: plugin 'returns' ({_dist('returns')} {V}): jarvis_register_engines returned a "
                    "value instead of calling register(...); the value is ignored (call register(key, target) for each item)"),
        ("halfbad", _failed("halfbad", "RuntimeError: tool table is corrupt (in jarvis_register_tools; its other "
                                       "registrations were dropped too: engine 'halfbad')")),
    ],
)
def test_load_time_mistakes_are_one_warning_each(bad_venv, name, warning):
    proc = _run(bad_venv, "plugins", "--json", load=name)
    assert proc.returncode == 0, proc.stderr
    assert _warnings(proc) == [warning]
    doc = json.loads(proc.stdout)
    assert {"core-parsers", "core-defaults", "engine-echo"} <= {p["name"] for p in doc["plugins"]}


def test_the_table_lists_load_failures_under_their_own_heading(bad_venv):
    proc = _run(bad_venv, "plugins", load="unknownhook,halfbad")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["PLUGIN", "DISTRIBUTION", "VERSION", "REGISTERS"]
    rows = {line.split()[0]: line.split(None, 3) for line in lines[1:lines.index("")]}
    assert set(rows) == {"core-defaults", "core-parsers", "engine-echo"}  # a failed plugin has no row
    assert rows["engine-echo"] == ["engine-echo", "jarvis-engine-echo", "0.1.0",
                                   "1 engine: echo; 1 config section: engine.echo"]
    at = lines.index("failed to load, not used (2):")
    assert lines[at + 1].split() == ["PLUGIN", "DISTRIBUTION", "VERSION", "ERROR"]
    failed = {line.split()[0]: line.split(None, 3)[1:] for line in lines[at + 2:at + 4]}
    assert failed == {
        "halfbad": [_dist("halfbad"), V, "RuntimeError: tool table is corrupt (in jarvis_register_tools; its other "
                                         "registrations were dropped too: engine 'halfbad')"],
        "unknownhook": [_dist("unknownhook"), V, "implements jarvis_register_widgets, which is not a jarvis hook"],
    }


USETIME = f"(plugin 'usetime', {_dist('usetime')} {V})"
FIX = "report it to the plugin's authors, or disable it with JARVIS_DISABLE_PLUGINS=usetime"


def _usetime(bad_venv, *args):
    proc = _run(bad_venv, *args, load="usetime")
    assert proc.returncode == 1 and proc.stdout == ""
    # The load-time warning about the defaults rule, then one error line.
    assert _warnings(proc) == [
        f"jarvis: warning: backend-default rule 'acme-llm' from {_dist('usetime')} {V} (plugin 'usetime') names "
        "tool parser 'hermess', which no installed plugin registers; did you mean 'hermes'?"
    ]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("jarvis: error: ")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    return errors[0]


@pytest.mark.parametrize(
    ("engine", "problem"),
    [
        ("ctor-raises", "failed to build: RuntimeError: cannot open /dev/acme0"),
        ("noimport", "could not be imported from 'jarvis_plugin_usetime.missing:Engine': ModuleNotFoundError: "
                     "No module named 'jarvis_plugin_usetime.missing'"),
        ("notengine", "is registered as 'jarvis_plugin_usetime.things:NotAnEngine', which is not a subclass of "
                      "jarvis_core.engine.InferenceEngine"),
    ],
)
def test_engine_failures_at_use_time_name_the_plugin(bad_venv, engine, problem):
    line = _usetime(bad_venv, "ask", "--engine", engine, "hi")
    assert line == f"jarvis: error: engine '{engine}' {USETIME} {problem}; {FIX}"


def test_tool_without_spec_names_the_plugin(bad_venv):
    line = _usetime(bad_venv, "ask", "--engine", "echo", "--agent", "tooluser", "--tools", "nospec", "hi")
    assert line == f"jarvis: error: tool 'nospec' {USETIME} built 'NoSpecTool', which has no 'spec' " \
                   f"(a jarvis_core.types.ToolSpec describing the tool to the model); {FIX}"


def test_parser_of_the_wrong_type_names_the_plugin(bad_venv):
    proc = bad_venv.run_python(
        "from jarvis_core.parsers import get_tool_parser\n"
        "from jarvis_core.errors import PluginError\n"
        "try:\n    get_tool_parser('notaparser')\nexcept PluginError as exc:\n    print(exc)\n",
        env={"JARVIS_LOAD_PLUGINS": f"{CORE},usetime"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"parser 'notaparser' {USETIME} is registered as 'jarvis_plugin_usetime.things:NotAParser', which has no "
        f"parse method (subclass jarvis_core.parsers.ToolParser); {FIX}"
    )


def test_a_plugin_config_section_of_any_name_is_honoured(bad_venv, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[acme]\nlevel = 3\napi_key = "sk-acme-secret"\n', encoding="utf-8")
    env = {"JARVIS_LOAD_PLUGINS": "usetime", "JARVIS_CONFIG": str(config)}
    proc = bad_venv.run_python(
        "from jarvis_core.config import load_config\nprint(repr(load_config().plugin_sections['acme'].level))\n",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "3\n"
    shown = bad_venv.jarvis("config", "show", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["acme"] == {"level": 3, "api_key": "***"}  # masked

    config.write_text("[acme]\nlevle = 3\n", encoding="utf-8")
    bad = bad_venv.jarvis("config", "show", env=env)
    assert bad.returncode == 1
    assert f"{config}:2" in bad.stderr and "'acme.levle'" in bad.stderr and "acme.level" in bad.stderr


# -- clashes --------------------------------------------------------------------------------------------------
def _twin(plugin_project, root: pathlib.Path, letter: str) -> pathlib.Path:
    module = f"jarvis_plugin_twin_{letter}"
    return plugin_project(
        root, f"jarvis-plugin-twin-{letter}", f"1.{'ab'.index(letter)}.0", {f"twin-{letter}": f"{module}.plugin"},
        {
            f"{module}/plugin.py": f"""\
                from jarvis_core import hookimpl

                @hookimpl
                def jarvis_register_engines(register):
                    register("twin", "jarvis_core.testing:FakeEngine", discoverable=False)
                    register("only-{letter}", "jarvis_core.testing:FakeEngine", discoverable=False)
                """
        },
    )


@pytest.fixture(scope="module")
def clash_venv(plugin_venv, plugin_project, example_echo_project, tmp_path_factory):
    """twin-b is installed first; twin-a (which loads first, by name) arrives later: it is the newcomer."""
    root = tmp_path_factory.mktemp("clash-projects")
    venv = plugin_venv("clash", [_twin(plugin_project, root, "b"), example_echo_project])
    venv.install(_twin(plugin_project, root, "a"))
    return venv


CLASH = (
    "engine 'twin' is registered by both jarvis-plugin-twin-a 1.0.0 (plugin 'twin-a') and jarvis-plugin-twin-b "
    "1.1.0 (plugin 'twin-b'); it is unusable until one is removed: pip uninstall jarvis-plugin-twin-a, or "
    'JARVIS_DISABLE_PLUGINS=twin-a, or choose one in the config with [plugins] prefer = ["twin-b"]'
)


def test_a_clash_does_not_take_down_every_command(clash_venv):
    proc = clash_venv.jarvis("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"jarvis: warning: {CLASH}; every other key still works\n"
    doc = json.loads(proc.stdout)
    assert {"twin-a", "twin-b", "engine-echo"} <= {p["name"] for p in doc["plugins"]}
    [clash] = doc["clashes"]
    assert (clash["kind"], clash["key"]) == ("engine", "twin")
    assert [b["distribution"] for b in clash["by"]] == ["jarvis-plugin-twin-a", "jarvis-plugin-twin-b"]
    ask = clash_venv.jarvis("ask", "--engine", "echo", "fine")
    assert ask.returncode == 0 and ask.stdout == "fine\n"


def test_the_table_shows_the_clash_on_both_rows_and_under_its_own_heading(clash_venv):
    proc = clash_venv.jarvis("plugins")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    rows = {line.split()[0]: line.split(None, 3)[1:] for line in lines[1:lines.index("")]}
    assert rows["twin-a"] == ["jarvis-plugin-twin-a", "1.0.0", "1 engine: only-a; clashing (unusable): engine twin"]
    assert rows["twin-b"] == ["jarvis-plugin-twin-b", "1.1.0", "1 engine: only-b; clashing (unusable): engine twin"]
    at = lines.index("registered twice, unusable until one is removed or [plugins] prefer picks one (1):")
    assert lines[at + 2].split(None, 2) == [
        "engine", "twin", "twin-a (jarvis-plugin-twin-a 1.0.0), twin-b (jarvis-plugin-twin-b 1.1.0)"]


def test_the_clashing_key_is_unusable_and_names_the_newcomer(clash_venv):
    proc = clash_venv.jarvis("ask", "--engine", "twin", "hi")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == f"jarvis: error: {CLASH}"


def test_config_or_environment_says_which_wins(clash_venv, tmp_path):
    code = "from jarvis_core.plugins import get_registry\nprint(get_registry().get('engine', 'twin').distribution)\n"
    proc = clash_venv.run_python(code, env={"JARVIS_PREFER_PLUGINS": "jarvis-plugin-twin-b"})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "jarvis-plugin-twin-b\n", "")
    config = tmp_path / "config.toml"
    config.write_text('[plugins]\nprefer = ["twin-a"]\n', encoding="utf-8")
    proc = clash_venv.run_python(code, env={"JARVIS_CONFIG": str(config)})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "jarvis-plugin-twin-a\n", "")
    shown = clash_venv.jarvis("config", "show", "--json", env={"JARVIS_CONFIG": str(config)})
    assert shown.returncode == 0 and json.loads(shown.stdout)["plugins"] == {"prefer": ["twin-a"]}
