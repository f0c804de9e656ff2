"""Plugin commands (``jarvis_register_commands``) from real distributions installed into a real venv.

- A plugin command runs like a built-in one, and only its own target is imported: another plugin's command
  whose module raises on import does not disturb it.
- ``jarvis --help`` lists plugin commands with their registered summaries, without importing their targets
  (the broken one is listed too), and exits 0.
- Running the broken command is one error line naming the plugin and its distribution; ``--debug`` shows the
  traceback.
- A target without ``run`` is an error naming the plugin.
- A plugin cannot take a built-in command's name: one warning names it, ``jarvis plugins`` lists it with the
  clashes, and the built-in still runs.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

GOOD = ("jarvis-plugin-hello", "0.4.0", "hello")
BROKEN = ("jarvis-plugin-loud", "1.2.3", "loud")
THIEF = ("jarvis-plugin-thief", "0.0.1", "thief")
HALF = ("jarvis-plugin-half", "0.9.0", "half")


def _plugin(write, root, meta, register_lines, modules):
    dist, version, ep = meta
    pkg = dist.replace("-", "_")
    plugin = "from jarvis_core import hookimpl\n\n@hookimpl\ndef jarvis_register_commands(register):\n" + "".join(
        f"    {line}\n" for line in register_lines
    )
    return write(root, dist, version, {ep: f"{pkg}.plugin"}, {f"{pkg}/plugin.py": plugin, **modules})


@pytest.fixture(scope="module")
def command_venv(plugin_venv, plugin_project, example_echo_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("command-projects")
    good = _plugin(plugin_project, root, GOOD,
                   ['register("hello", "jarvis_plugin_hello.cmd", description="greet someone by name")'],
                   {"jarvis_plugin_hello/cmd.py": """\
                        import sys

                        def add_parser(subparsers):
                            p = subparsers.add_parser("hello", help="greet someone by name")
                            p.add_argument("name")
                            p.add_argument("--shout", action="store_true")
                            return p

                        def run(args):
                            text = f"hello {args.name}"
                            print(text.upper() if args.shout else text)
                            return 3 if args.name == "three" else 0
                        """})
    broken = _plugin(plugin_project, root, BROKEN,
                     ['register("loud", "jarvis_plugin_loud.cmd", description="a command whose module cannot import")'],
                     {"jarvis_plugin_loud/cmd.py": 'raise RuntimeError("boom: loud needs a missing backend")\n'})
    thief = _plugin(plugin_project, root, THIEF,
                    ['register("ask", "jarvis_plugin_thief.cmd", description="not the real ask")'],
                    {"jarvis_plugin_thief/cmd.py": 'raise RuntimeError("the thief must never be imported")\n'})
    half = _plugin(plugin_project, root, HALF,
                   ['register("half", "jarvis_plugin_half.cmd:Command", description="has no run")'],
                   {"jarvis_plugin_half/cmd.py": """\
                        class Command:
                            @staticmethod
                            def add_parser(subparsers):
                                return subparsers.add_parser("half")
                        """})
    return plugin_venv("commands", [good, broken, thief, half, example_echo_project])


def test_plugin_command_runs_like_a_builtin(command_venv):
    proc = command_venv.jarvis("hello", "world", "--shout")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "HELLO WORLD\n"
    # The broken plugin's module was never imported (it would have raised); only the thief's warning shows.
    assert "boom" not in proc.stderr and "Traceback" not in proc.stderr
    assert command_venv.jarvis("hello", "three").returncode == 3


def test_plugin_command_usage_errors_are_argparse_errors(command_venv):
    proc = command_venv.jarvis("hello")
    assert proc.returncode == 2
    assert "usage: jarvis hello" in proc.stderr and "name" in proc.stderr


def test_help_lists_plugin_commands_without_importing_them(command_venv):
    proc = command_venv.jarvis("--help")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.split() == ["hello", "greet", "someone", "by", "name"] for line in lines), proc.stdout
    assert any(line.strip().startswith("loud") and "a command whose module cannot import" in line for line in lines)
    assert any(line.strip().startswith("half") for line in lines)
    assert "boom" not in proc.stderr and "never be imported" not in proc.stderr
    assert "not the real ask" not in proc.stdout


def test_broken_plugin_command_is_one_error_naming_plugin_and_distribution(command_venv):
    proc = command_venv.jarvis("loud")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("jarvis: error:")]
    assert len(errors) == 1, proc.stderr
    line = errors[0]
    assert "'loud'" in line and f"'{BROKEN[2]}'" in line and f"{BROKEN[0]} {BROKEN[1]}" in line
    assert "RuntimeError: boom: loud needs a missing backend" in line
    assert "Traceback" not in proc.stderr
    debug = command_venv.jarvis("loud", "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_target_without_run_is_an_error_naming_the_plugin(command_venv):
    proc = command_venv.jarvis("half")
    assert proc.returncode == 1
    assert f"'{HALF[2]}'" in proc.stderr and HALF[0] in proc.stderr and "has no run" in proc.stderr


THIEF_WARNING = (
    f"jarvis: warning: command 'ask' is registered by {THIEF[0]} {THIEF[1]} (plugin 'thief') and is a built-in jarvis "
    "command; the plugin's command is ignored (rename it in the plugin, or disable it with "
    "JARVIS_DISABLE_PLUGINS=thief)"
)


@pytest.mark.parametrize("args", [["--help"], ["hello", "you"], ["plugins"]])
def test_a_plugin_cannot_take_a_builtin_name_and_is_told_once(command_venv, args):
    proc = command_venv.jarvis(*args)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("jarvis: warning:")]
    assert [line for line in warnings if "'ask'" in line] == [THIEF_WARNING]


def test_the_builtin_still_answers_and_the_thief_is_never_imported(command_venv):
    ask = command_venv.jarvis("ask", "--engine", "echo", "still", "mine")
    assert ask.returncode == 0, ask.stderr
    assert ask.stdout == "still mine\n" and "never be imported" not in ask.stderr


def test_jarvis_plugins_lists_a_command_clash_like_a_key_clash(command_venv):
    proc = command_venv.jarvis("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["clashes"] == [{
        "kind": "command", "key": "ask", "builtin": True,
        "by": [{"plugin": "thief", "distribution": THIEF[0], "version": THIEF[1]},
               {"plugin": "(built-in)", "distribution": "jarvis-core", "version": doc["core_version"]}],
    }]
    table = command_venv.jarvis("plugins").stdout.splitlines()
    rows = {line.split()[0]: line.split(None, 3)[1:] for line in table[1:table.index("")]}
    assert rows["thief"] == [THIEF[0], THIEF[1], "ignored (a built-in's name): command ask"]
    at = table.index("take a built-in command's name, ignored (1):")
    assert [line.split(None, 2) for line in table[at + 1:at + 3]] == [
        ["KIND", "KEY", "REGISTERED BY"], ["command", "ask", f"thief ({THIEF[0]} {THIEF[1]})"]]


def test_unknown_command_lists_plugin_commands(command_venv):
    proc = command_venv.jarvis("frobnicate")
    assert proc.returncode == 2
    assert "invalid choice: 'frobnicate'" in proc.stderr and "'hello'" in proc.stderr
