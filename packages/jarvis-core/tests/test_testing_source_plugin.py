"""``source_plugin``: the plugin under test, from its source checkout, next to the installed plugins."""

from __future__ import annotations

import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from jarvis_core.defaults import resolve
from jarvis_core.errors import PluginError
from jarvis_core.plugins import get_registry
from jarvis_core.testing import source_plugin

pytest_plugins = ["jarvis_core.testing.pytest_plugin"]


def _project(root, entry_points='acme-src = "jarvis_acme_src.plugin"', plugin_source=None):
    (root / "src" / "jarvis_acme_src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "jarvis-acme-src"\nversion = "0.3.0"\n\n[project.entry-points.jarvis]\n{entry_points}\n',
        encoding="utf-8",
    )
    (root / "src" / "jarvis_acme_src" / "__init__.py").write_text("", encoding="utf-8")
    (root / "src" / "jarvis_acme_src" / "plugin.py").write_text(
        textwrap.dedent(
            plugin_source
            or """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_backend_defaults(register):
                register("acme-src", tool_parser="hermes", sampling={"temperature": 0.2})
            """
        ),
        encoding="utf-8",
    )
    return root


@pytest.fixture
def forget_module():
    yield
    for name in [m for m in sys.modules if m.startswith("jarvis_acme_src")]:
        del sys.modules[name]


def test_source_plugin_sees_the_core_parsers_and_its_own_rules(tmp_path, forget_module):
    project = _project(tmp_path / "proj")
    with source_plugin(project / "src") as registry:  # any folder inside the project will do
        assert get_registry() is registry
        resolved = resolve("acme-src-7b")
        assert resolved.tool_parser == "hermes" and resolved.sampling["temperature"] == 0.2
        assert resolved.provenance["tool_parser"].distribution == "jarvis-acme-src"
        assert "tool:hermes" in registry.items("parser")  # the installed built-ins are there too
    assert get_registry() is not registry


def test_fixture_form(tmp_path, forget_module, jarvis_source_plugin):
    registry = jarvis_source_plugin(_project(tmp_path / "proj"))
    assert registry.pm.distribution_of("acme-src") == ("jarvis-acme-src", "0.3.0")


def test_a_project_without_entry_points_says_what_to_add(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "jarvis-x"\n', encoding="utf-8")
    with pytest.raises(PluginError, match=r"declares no \[project.entry-points.jarvis\] table.*add one"):
        source_plugin(project).__enter__()


def test_a_plugin_module_that_does_not_import_is_named(tmp_path, forget_module):
    project = _project(tmp_path / "proj", plugin_source="import jarvis_no_such_dependency\n")
    with pytest.raises(PluginError, match=r"entry point 'acme-src' of jarvis-acme-src names 'jarvis_acme_src.plugin'"
                       r", which does not import .*ModuleNotFoundError"):
        source_plugin(project).__enter__()


def test_no_pyproject_is_a_clear_error():
    # Not tmp_path: under nox the temporary folder lies inside this repository, below its pyproject.toml.
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        start = Path(folder)
        if any((p / "pyproject.toml").exists() for p in (start, *start.parents)):
            pytest.skip("a pyproject.toml lies above /tmp on this machine")
        with pytest.raises(PluginError, match=r"no pyproject\.toml"):
            source_plugin(start).__enter__()
