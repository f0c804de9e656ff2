"""The ``jarvis`` command: argument parsing and dispatch to ``cli/cmd_<name>.py`` modules.

Each command module exposes ``add_parser(subparsers)`` and ``run(args) -> int`` and imports anything heavy
inside ``run``. Only the module of the command being run is imported: the others appear in ``jarvis --help``
through the one-line summaries below, so ``jarvis plugins`` never pays for httpx, attrs or the config code.

Plugins add commands through the ``jarvis_register_commands`` hook (``jarvis serve`` comes from
jarvis-server). A built-in command never scans the registry. ``jarvis --help`` and a plugin command scan it
(the cost of ``jarvis plugins``) but import only the target of the command being run; ``--help`` lists plugin
commands from their registered descriptions. A plugin command that fails to load is an error naming its
plugin and distribution when it is run, and leaves every other command working. A plugin cannot take a
built-in command's name: it is skipped with a warning naming it.

Exit status: 0 on success, 1 on an error (one line on stderr saying what to do; the traceback only with
``--debug``), 2 on a usage error (argparse's, or a :class:`~jarvis_core.errors.UsageError` a command raises,
printed as one ``jarvis: error: …`` line), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from jarvis_core.cli import output
from jarvis_core.cli.builtin_commands import COMMANDS
from jarvis_core.cli.signals import exit_code, signals_as_interrupts
from jarvis_core.switches import env_flag

__all__ = ["COMMANDS", "build_parser", "main", "plugin_commands"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _version() -> str:
    from jarvis_core import __version__

    return __version__


def _selected_command(argv: Sequence[str]) -> Optional[str]:
    # Top-level options take no values, so the first non-option word is the command.
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _command_module(name: str) -> Any:
    module_name = COMMANDS[name][0]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        from jarvis_core.errors import JarvisError

        raise JarvisError(f"the '{name}' command is not available in this jarvis-core build ({module_name} is missing)") from None


def plugin_commands() -> Dict[str, Any]:
    """The commands plugins registered, by name (:class:`~jarvis_core.plugins.Registration` values).

    Scans the registry but imports no command target. A registration that takes a built-in command's name
    is not among them: the registry leaves it out and warns about it once (``Registry.builtin_clashes``).
    """
    from jarvis_core.plugins.registry import get_registry

    return {name: reg for name, reg in get_registry().items("command").items() if name not in COMMANDS}


def _plugin_command_module(reg: Any) -> Any:
    """Import a plugin command's target and check it has ``add_parser`` and ``run``; a failure is a
    :class:`~jarvis_core.errors.PluginError` naming the plugin and its distribution."""
    from jarvis_core.errors import PluginError

    where = f"the '{reg.key}' command of plugin {reg.plugin!r} from {reg.distribution} {reg.version}"
    try:
        # A command target is usually a whole module ("pkg.cli"), which "module:attribute" targets cannot name.
        if isinstance(reg.target, str) and ":" not in reg.target:
            target = importlib.import_module(reg.target)
        else:
            target = reg.load()
    except Exception as exc:
        raise PluginError(
            f"{where} failed to load: {type(exc).__name__}: {exc} (reinstall or pip uninstall {reg.distribution})"
        ) from exc
    missing = [attr for attr in ("add_parser", "run") if not callable(getattr(target, attr, None))]
    if missing:
        raise PluginError(f"{where} is broken: its target {reg.target_name()!r} has no {' or '.join(missing)}")
    return target


def _listing_plugin_commands() -> Dict[str, Any]:
    # ``jarvis --help`` must work whatever the plugins do: a registry that cannot be built is a warning.
    from jarvis_core.errors import JarvisError

    try:
        return plugin_commands()
    except JarvisError as exc:
        warnings.warn(f"plugin commands are not listed: {exc}", UserWarning, stacklevel=2)
        return {}


def build_parser(command: Optional[str] = None, *, full: bool = False) -> argparse.ArgumentParser:
    """The ``jarvis`` parser.

    With ``command``, only that command is added (its module, or its plugin's target, is imported); with
    none (or a name nobody registered), every command is listed with its summary (for ``jarvis --help``).
    ``full=True`` builds every built-in command (for documentation).
    """
    parser = argparse.ArgumentParser(
        prog="jarvis",
        description="jarvis: a plugin framework for LLM inference.",
        epilog="Add --debug to any command for tracebacks. See 'jarvis COMMAND --help'.",
    )
    parser.add_argument("--version", action="version", version=f"jarvis-core {_version()}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors (also JARVIS_DEBUG=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command in COMMANDS or full:
        for name in COMMANDS:
            if full or name == command:
                _command_module(name).add_parser(subparsers)
        return parser
    plugins = plugin_commands() if command is not None else {}
    if command in plugins:
        _add_plugin_parser(plugins[command], subparsers)
        return parser
    # Only the listing: these parsers never parse (a named command gets its own parser above), so they are built
    # without their -h action, which is most of a parser's cost and every command pays it at start-up.
    for name, (_module, summary) in COMMANDS.items():
        subparsers.add_parser(name, help=summary, add_help=False)
    for name, reg in (plugins or _listing_plugin_commands()).items():
        subparsers.add_parser(name, help=reg.description or f"(from {reg.distribution})", add_help=False)
    return parser


def _add_plugin_parser(reg: Any, subparsers: Any) -> None:
    from jarvis_core.errors import PluginError

    module = _plugin_command_module(reg)
    try:
        module.add_parser(subparsers)
    except Exception as exc:
        raise PluginError(
            f"the '{reg.key}' command of plugin {reg.plugin!r} from {reg.distribution} {reg.version} could not "
            f"build its arguments: {type(exc).__name__}: {exc}"
        ) from exc
    if reg.key not in subparsers.choices:
        raise PluginError(
            f"plugin {reg.plugin!r} from {reg.distribution} {reg.version} registered the command {reg.key!r} but its "
            f"add_parser added {', '.join(map(repr, subparsers.choices)) or 'nothing'}"
        )


def _runner(name: str) -> Any:
    if name in COMMANDS:
        return _command_module(name)
    return _plugin_command_module(plugin_commands()[name])


def _split_debug(argv: List[str]) -> Tuple[List[str], bool]:
    """Accept ``--debug`` anywhere before ``--`` (``jarvis ask --debug …`` as well as ``jarvis --debug ask``)."""
    if "--" in argv:
        cut = argv.index("--")
        head, tail = argv[:cut], argv[cut:]
    else:
        head, tail = argv, []
    debug = "--debug" in head
    return [a for a in head if a != "--debug"] + tail, debug


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``jarvis`` command with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    args_list, debug = _split_debug(list(sys.argv[1:] if argv is None else argv))
    debug = debug or env_flag("JARVIS_DEBUG")
    with warnings.catch_warnings():
        warnings.showwarning = output.show_warning
        # Our own deprecations (legacy config keys) are meant for the user of the command.
        warnings.filterwarnings("default", category=DeprecationWarning, module=r"jarvis")
        # A plugin using a deprecated public name: shown once per place, whatever the plugin's module is called.
        from jarvis_core.errors import JarvisDeprecationWarning  # stdlib-only module; cheap

        warnings.filterwarnings("default", category=JarvisDeprecationWarning)
        try:
            parser = build_parser(_selected_command(args_list))
            args = parser.parse_args(args_list)
            args.debug = debug
            if args.command is None:
                parser.print_help(sys.stderr)
                return EXIT_USAGE
            with signals_as_interrupts():
                return int(_runner(args.command).run(args) or 0)
        except SystemExit as exc:  # argparse: --help, --version and usage errors
            code = exc.code
            return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_ERROR)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (cli.signals)
            print(file=sys.stderr)
            return exit_code(exc)
        except BrokenPipeError:
            # The reader went away (``jarvis plugins | head``); keep Python from complaining at exit.
            _silence_stdout()
            return EXIT_ERROR
        except Exception as exc:
            from jarvis_core.errors import UsageError  # stdlib-only module; cheap

            output.print_error(exc, debug=debug)
            return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_ERROR


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
