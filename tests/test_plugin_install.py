"""Real plugin distributions, installed with pip into a real venv, seen through the real ``jarvis`` CLI.

- A plugin whose module raises on import and one that implements a hook this core does not know: each gives
  ONE warning line naming its distribution, version and error; ``jarvis plugins`` exits 0 and lists every
  other plugin; ``jarvis ask`` on another plugin's engine still answers.
- ``JARVIS_STRICT_PLUGINS=1`` turns the failure into an error (non-zero exit, one line naming the plugin).
- ``JARVIS_LOAD_PLUGINS`` (allow-list) and ``JARVIS_DISABLE_PLUGINS`` (block-list), built-ins included.
- Two distributions registering the same engine key: disabling one resolves it (the clash itself, a warning
  naming both while every other key keeps working, is in ``test_plugin_failures.py``).
"""

from __future__ import annotations

import json
import pathlib

import pytest

pytestmark = pytest.mark.slow

BROKEN = ("jarvis-plugin-broken", "0.3.1", "broken")
NEWHOOK = ("jarvis-plugin-newhook", "0.2.0", "newhook")


def _broken_projects(write_plugin_project, root: pathlib.Path) -> list[pathlib.Path]:
    broken = write_plugin_project(
        root, BROKEN[0], BROKEN[1], {BROKEN[2]: "jarvis_plugin_broken.plugin"},
        {"jarvis_plugin_broken/plugin.py": 'raise RuntimeError("boom: this plugin cannot import its backend")\n'},
    )
    newhook = write_plugin_project(
        root, NEWHOOK[0], NEWHOOK[1], {NEWHOOK[2]: "jarvis_plugin_newhook.plugin"},
        {
            "jarvis_plugin_newhook/plugin.py": """\
                from jarvis_core import hookimpl

                @hookimpl
                def jarvis_register_widgets(register):
                    register("w", "jarvis_plugin_newhook.plugin:W")
                """
        },
    )
    return [broken, newhook]


def _twin_projects(write_plugin_project, root: pathlib.Path) -> list[pathlib.Path]:
    projects = []
    for letter in "ab":
        module = f"jarvis_plugin_twin_{letter}"
        projects.append(
            write_plugin_project(
                root, f"jarvis-plugin-twin-{letter}", f"1.{'ab'.index(letter)}.0", {f"twin-{letter}": f"{module}.plugin"},
                {
                    f"{module}/plugin.py": f"""\
                        from jarvis_core import hookimpl

                        @hookimpl
                        def jarvis_register_engines(register):
                            register("twin", "{module}.engine:TwinEngine")
                        """
                },
            )
        )
    return projects


@pytest.fixture(scope="module")
def broken_venv(plugin_venv, plugin_project, example_echo_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("broken-projects")
    return plugin_venv("broken", [*_broken_projects(plugin_project, root), example_echo_project])


@pytest.fixture(scope="module")
def twin_venv(plugin_venv, plugin_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("twin-projects")
    return plugin_venv("twin", _twin_projects(plugin_project, root))


def _doc(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _names(doc: dict) -> list[str]:
    return [p["name"] for p in doc["plugins"]]


def test_broken_plugins_warn_once_each_and_the_rest_loads(broken_venv):
    proc = broken_venv.jarvis("plugins", "--json")
    doc = _doc(proc)

    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr  # one line per broken plugin, no traceback
    broken_line = next(line for line in lines if f"'{BROKEN[2]}'" in line)
    assert broken_line.startswith("jarvis: warning: ")
    assert BROKEN[0] in broken_line and BROKEN[1] in broken_line
    assert "RuntimeError: boom: this plugin cannot import its backend" in broken_line
    newhook_line = next(line for line in lines if f"'{NEWHOOK[2]}'" in line)
    assert NEWHOOK[0] in newhook_line and NEWHOOK[1] in newhook_line and "jarvis_register_widgets" in newhook_line
    assert "Traceback" not in proc.stderr

    failures = {f["plugin"]: f for f in doc["failures"]}
    assert failures[BROKEN[2]]["distribution"] == BROKEN[0] and failures[BROKEN[2]]["version"] == BROKEN[1]
    assert "jarvis_register_widgets" in failures[NEWHOOK[2]]["error"]

    names = _names(doc)
    assert {"core-parsers", "core-defaults", "engine-echo"} <= set(names)
    assert BROKEN[2] not in names and NEWHOOK[2] not in names
    echo = next(p for p in doc["plugins"] if p["name"] == "engine-echo")
    assert echo["distribution"] == "jarvis-engine-echo" and echo["version"] == "0.1.0"
    assert echo["hooks"] == ["jarvis_register_config_sections", "jarvis_register_engines"]
    assert echo["registered"]["engine"] == [
        {"key": "echo", "target": "jarvis_engine_echo.engine:EchoEngine",
         "description": "repeats the last user message (example plugin)", "discoverable": False}
    ]


def test_other_commands_still_work_with_a_broken_plugin(broken_venv):
    proc = broken_venv.jarvis("ask", "--engine", "echo", "still", "working")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "still working\n"
    assert proc.stderr.count("jarvis: warning:") == 2


def test_strict_mode_fails_naming_the_plugin(broken_venv):
    proc = broken_venv.jarvis("plugins", env={"JARVIS_STRICT_PLUGINS": "1"})
    assert proc.returncode == 1
    assert proc.stdout == ""
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith("jarvis: error: ")
    assert f"'{BROKEN[2]}'" in line and BROKEN[0] in line and "boom" in line


def test_strict_mode_debug_shows_the_traceback(broken_venv):
    proc = broken_venv.jarvis("plugins", "--debug", env={"JARVIS_STRICT_PLUGINS": "1"})
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "RuntimeError" in proc.stderr


@pytest.mark.parametrize(
    ("allow", "expected"),
    [
        ("engine-echo", ["engine-echo"]),  # by entry-point name: the built-ins are not loaded either
        ("jarvis-core", ["core-defaults", "core-parsers", "core-prompts"]),  # by distribution name
        (f"engine-echo,{BROKEN[2]}", ["engine-echo"]),
    ],
)
def test_allow_list(broken_venv, allow, expected):
    proc = broken_venv.jarvis("plugins", "--json", env={"JARVIS_LOAD_PLUGINS": allow})
    doc = _doc(proc)
    assert sorted(_names(doc)) == expected
    assert "core-parsers" in doc["skipped"] or "core-parsers" in expected
    assert [f["plugin"] for f in doc["failures"]] == ([BROKEN[2]] if BROKEN[2] in allow else [])
    assert proc.stderr.count("jarvis: warning:") == len(doc["failures"])


def test_empty_allow_list_loads_nothing(broken_venv):
    doc = _doc(broken_venv.jarvis("plugins", "--json", env={"JARVIS_LOAD_PLUGINS": ""}))
    assert doc["plugins"] == [] and doc["failures"] == []
    assert {"core-parsers", "core-defaults", "engine-echo", BROKEN[2]} <= set(doc["skipped"])


def test_block_list_silences_broken_plugins_and_covers_builtins(broken_venv):
    proc = broken_venv.jarvis(
        "plugins", "--json", env={"JARVIS_DISABLE_PLUGINS": f"{BROKEN[2]}, {NEWHOOK[0]}, core-parsers"}
    )
    doc = _doc(proc)
    assert proc.stderr == ""
    names = _names(doc)
    assert "core-parsers" not in names and "core-defaults" in names and "engine-echo" in names
    assert {BROKEN[2], NEWHOOK[2], "core-parsers"} <= set(doc["skipped"])
    assert doc["failures"] == []


def test_block_list_by_distribution_removes_both_builtins(broken_venv):
    doc = _doc(broken_venv.jarvis("plugins", "--json", env={"JARVIS_DISABLE_PLUGINS": f"jarvis-core,{BROKEN[2]},{NEWHOOK[2]}"}))
    assert "core-parsers" not in _names(doc) and "core-defaults" not in _names(doc)
    assert "engine-echo" in _names(doc)


def test_duplicate_key_resolved_by_disabling_one(twin_venv):
    doc = _doc(twin_venv.jarvis("plugins", "--json", env={"JARVIS_DISABLE_PLUGINS": "jarvis-plugin-twin-b"}))
    twin_a = next(p for p in doc["plugins"] if p["name"] == "twin-a")
    assert twin_a["registered"]["engine"][0]["key"] == "twin"
    assert "twin-b" in doc["skipped"]
