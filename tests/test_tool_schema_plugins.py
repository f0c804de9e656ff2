"""A tool whose own JSON schema is broken, shipped by a real distribution pip-installed into a real venv: the
error names the tool, the plugin and the distribution when the tool is loaded, and never reaches the model as
a complaint about its arguments."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

DIST, V = "jarvis-plugin-badschema", "0.1.0"
CORE = "core-parsers,core-defaults,engine-echo"
WHO = f"(plugin 'badschema', {DIST} {V})"
FIX = "report it to the plugin's authors, or disable it with JARVIS_DISABLE_PLUGINS=badschema"

MODULES = {
    "jarvis_plugin_badschema/plugin.py": """\
        from jarvis_core import hookimpl

        M = "jarvis_plugin_badschema.tools"

        @hookimpl
        def jarvis_register_tools(register):
            register("objekt", M + ":Objekt")
            register("stringly", M + ":stringly")
            register("fine", M + ":Fine")

        @hookimpl
        def jarvis_register_agents(register):
            register("tooluser", M + ":ToolUser")
        """,
    "jarvis_plugin_badschema/tools.py": """\
        from jarvis_core.agents import ToolUsingAgent
        from jarvis_core.tools import BaseTool
        from jarvis_core.types import ToolSpec

        class Objekt(BaseTool):
            spec = ToolSpec("objekt", "A typo in the schema.", {"type": "objekt", "properties": {}})

            def run(self, **arguments):
                return "never"

        class _Stringly(BaseTool):
            spec = ToolSpec("stringly", "A schema that is a string.", "object")

            def run(self, **arguments):
                return "never"

        def stringly():
            return _Stringly()

        class Fine(BaseTool):
            spec = ToolSpec("fine", "A good schema.", {"type": "object", "properties": {}})

            def run(self):
                return "fine"

        class ToolUser(ToolUsingAgent):
            agent_id = "tooluser"
        """,
}


@pytest.fixture(scope="module")
def venv(plugin_venv, plugin_project, example_echo_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("badschema-project")
    project = plugin_project(root, DIST, V, {"badschema": "jarvis_plugin_badschema.plugin"}, MODULES)
    return plugin_venv("badschema", [project, example_echo_project])


def _error(venv, tool: str) -> str:
    proc = venv.jarvis("ask", "--engine", "echo", "--agent", "tooluser", "--tools", tool, "hi",
                       env={"JARVIS_LOAD_PLUGINS": f"{CORE},badschema"})
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("jarvis: error: ")]
    return line


def test_a_class_with_a_broken_schema_is_named_when_loaded(venv):
    assert _error(venv, "objekt") == (
        f"jarvis: error: tool 'objekt' {WHO} is registered as 'jarvis_plugin_badschema.tools:Objekt', which has a "
        f"broken parameters schema: 'objekt' is not valid under any of the given schemas (at 'type'); {FIX}")


def test_a_factory_building_a_string_schema_is_named(venv):
    assert _error(venv, "stringly") == (
        f"jarvis: error: tool 'stringly' {WHO} built '_Stringly', which has a broken parameters schema: a schema "
        f"must be a JSON object, got string; {FIX}")


def test_a_good_tool_of_the_same_distribution_still_works(venv):
    proc = venv.jarvis("ask", "--engine", "echo", "--agent", "tooluser", "--tools", "fine", "hi",
                       env={"JARVIS_LOAD_PLUGINS": f"{CORE},badschema"})
    assert proc.returncode == 0, proc.stderr
