"""``jarvis config path|show|init``: locate, print or create the config file.

* ``path``: the file jarvis reads (``$JARVIS_CONFIG``, ``$JARVIS_HOME/config.toml`` or
  ``~/.jarvis/config.toml``), whether or not it exists.
* ``show``: the effective config (file + legacy keys + environment) as TOML, or JSON with ``--json``;
  secrets are masked. Validates the file: a bad key is an error naming file, line and the likely key.
* ``init``: write a commented default file; refuses to overwrite an existing one without ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``config`` (with ``path``, ``show`` and ``init``) to the ``jarvis`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "config",
        help="show, locate or create the config file",
        description="Locate (path), print (show) or create (init) jarvis' config file. "
        "JARVIS_CONFIG names the file; JARVIS_HOME the directory holding config.toml.",
    )
    sub = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    sub.add_parser("path", help="print the config file's path", description="Print the path of the config file.")
    show = sub.add_parser(
        "show", help="print the effective config (secrets masked)",
        description="Print the effective config: the file, legacy keys migrated, environment overrides applied. "
        "API keys are masked.",
    )
    show.add_argument("--json", action="store_true", help="JSON instead of TOML")
    init = sub.add_parser(
        "init", help="write a commented default config file",
        description="Write a commented default config file (at the path 'jarvis config path' prints).",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument("--path", metavar="FILE", help="write here instead")
    return p


def _explicit_path(args: argparse.Namespace) -> Optional[str]:
    # A global --config option, should the CLI grow one.
    return getattr(args, "config", None)


def run(args: argparse.Namespace) -> int:
    """Run ``jarvis config ACTION``."""
    from jarvis_core.config import config_path

    action = args.config_command
    if action == "path":
        print(_explicit_path(args) or config_path())
        return 0
    if action == "show":
        from jarvis_core.config import dumps_json, dumps_toml, load_config
        from jarvis_core.config.value_checks import check_values

        config = load_config(_explicit_path(args))
        check_values(config)
        sys.stdout.write(dumps_json(config) + "\n" if args.json else dumps_toml(config))
        return 0
    if action == "init":
        return _init(Path(args.path or _explicit_path(args) or config_path()).expanduser(), force=args.force)
    raise AssertionError(f"unhandled config action {action!r}")  # argparse restricts the choices


def _init(target: Path, *, force: bool) -> int:
    from jarvis_core.config import default_config_text
    from jarvis_core.errors import ConfigError

    if target.exists() and not force:
        raise ConfigError("a config file already exists; pass --force to overwrite it", path=str(target))
    if target.is_dir():
        raise ConfigError("is a directory, not a file", path=str(target))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(default_config_text(), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the config file: {exc.strerror or exc}", path=str(target)) from None
    print(f"wrote {target}")
    return 0
