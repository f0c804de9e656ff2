"""The ``jarvis`` entry point: help, version, usage errors, ``--debug`` anywhere, one-line errors and
warnings, lazy command modules, and the real console script in a subprocess."""

from __future__ import annotations

import io
import pathlib
import subprocess
import sys
import warnings

import pytest

from jarvis_core.cli import output
from jarvis_core.cli.main import COMMANDS, build_parser, main, plugin_commands
from jarvis_core.errors import ConfigError, JarvisError
from jarvis_core.plugins import PluginLoadWarning


def test_version(capsys):
    assert main(["--version"]) == 0
    from jarvis_core import __version__

    assert capsys.readouterr().out == f"jarvis-core {__version__}\n"


def test_no_command_prints_help_listing_every_command(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    for name, (_module, summary) in COMMANDS.items():
        assert name in err and summary in err


def test_unknown_command_is_a_usage_error(capsys):
    assert main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_bad_option_is_a_usage_error(capsys):
    assert main(["plugins", "--indent", "wide"]) == 2
    assert "invalid int value: 'wide'" in capsys.readouterr().err


def test_debug_is_accepted_before_or_after_the_command(capsys):
    for argv in (["--debug", "plugins", "--hook", "nope"], ["plugins", "--hook", "nope", "--debug"]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("jarvis: error: unknown hook")


def test_debug_after_double_dash_is_an_argument(capsys):
    # "--" ends the options: what follows is data, even when it reads "--debug".
    assert main(["plugins", "--", "--debug"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_only_the_running_command_is_built():
    parser = build_parser("plugins")
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == ["plugins"]
    listing = build_parser(None)
    listed = list(next(a for a in listing._actions if a.dest == "command").choices)
    # Built-ins first, in order; then whatever commands installed plugins registered.
    assert listed[: len(COMMANDS)] == list(COMMANDS)
    assert set(listed[len(COMMANDS):]) == set(plugin_commands())


def test_every_command_module_that_exists_follows_the_contract(capsys):
    import importlib

    for name, (module_name, _summary) in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # owned by another package area and not written yet
            raise
        assert callable(module.add_parser) and callable(module.run), name
        assert main([name, "--help"]) == 0, name
        assert f"usage: jarvis {name}" in capsys.readouterr().out


def test_print_error_is_one_line():
    buf = io.StringIO()
    output.print_error(ConfigError("unknown key 'defualt'\nin [engine]", path="/x/c.toml", line=2, suggestion="default"),
                       file=buf)
    assert buf.getvalue() == "jarvis: error: /x/c.toml:2: unknown key 'defualt'; in [engine] (did you mean 'default'?)\n"
    buf = io.StringIO()
    output.print_error(JarvisError(""), file=buf)
    assert buf.getvalue() == "jarvis: error: JarvisError\n"
    buf = io.StringIO()
    output.print_error(FileNotFoundError(2, "No such file or directory"), file=buf)
    assert buf.getvalue() == "jarvis: error: FileNotFoundError: [Errno 2] No such file or directory\n"


def test_warnings_are_printed_as_one_line(capsys, monkeypatch):
    import jarvis_core.cli.cmd_plugins as cmd_plugins

    def run(args):
        warnings.warn("jarvis plugin 'x' from dist-x 1.0 failed to load\nand was skipped", PluginLoadWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(cmd_plugins, "run", run)  # a stand-in command, to raise a warning inside main()
    assert main(["plugins"]) == 0
    assert capsys.readouterr().err == "jarvis: warning: jarvis plugin 'x' from dist-x 1.0 failed to load; and was skipped\n"
    assert warnings.showwarning is not output.show_warning  # restored after main()


def _bin(name: str) -> pathlib.Path:
    return pathlib.Path(sys.executable).parent / name


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "jarvis_core.cli.main"],
        [sys.executable, "-m", "jarvis_core.cli"],
        [str(_bin("jarvis"))],
    ],
    ids=["module-main", "package", "console-script"],
)
def test_real_process(command):
    proc = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("jarvis-core ")
    proc = subprocess.run([*command, "plugins", "--hook", "nope"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("jarvis: error: unknown hook 'nope'")
    assert "Traceback" not in proc.stderr
