"""Writing ``[aliases]`` entries into the config file (``jarvis aliases set|remove``), keeping the rest of the
file (comments, order, other tables) as it was.

An entry is one line, ``name = "model"`` or ``name = { model = …, engine = …, options = {…} }``, under the
``[aliases]`` header (added at the end of the file when there is none). An alias written as a table of its
own (``[aliases.name]``) is left for the user to edit. The file is checked by loading it after the change;
a change that does not load is undone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

from jarvis_core.aliases import ModelAlias
from jarvis_core.config.render import _toml_value
from jarvis_core.config.toml_source import key_lines
from jarvis_core.config.validation import dotted
from jarvis_core.errors import ConfigError, UsageError

__all__ = ["remove_alias", "set_alias"]


def _entry(name: str, alias: ModelAlias) -> str:
    data = alias.to_dict()
    value = _toml_value(data["model"]) if list(data) == ["model"] else _toml_value(data)
    return f"{dotted((name,))} = {value}"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file: {exc}", path=str(path)) from None


def _line_of(path: Path, text: str, name: str) -> Optional[int]:
    """The 0-based line of the entry ``name``, or ``None``; an entry written as a table is an error."""
    number = key_lines(text).get(("aliases", name))
    if number is None:
        return None
    line = text.splitlines()[number - 1].strip()
    if line.startswith("["):
        raise UsageError(f"the alias {name!r} is written as a table ([aliases.{name}]) in {path}:{number}; edit it "
                         "there", argument="NAME")
    return number - 1


def _write(path: Path, lines: List[str], before: str) -> None:
    from jarvis_core.config.loader import load_config

    text = "\n".join(lines).rstrip("\n") + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    try:
        load_config(path)
    except ConfigError:
        path.write_text(before, encoding="utf-8")
        raise


def set_alias(path: Path, name: str, alias: ModelAlias) -> bool:
    """Write the entry ``name``; return ``True`` when it replaced one."""
    if not name.strip():
        raise UsageError("an alias needs a name", argument="NAME")
    before = _read(path)
    lines = before.splitlines()
    entry = _entry(name, alias)
    at = _line_of(path, before, name)
    if at is not None:
        lines[at] = entry
        _write(path, lines, before)
        return True
    header = next((i for i, line in enumerate(lines) if line.split("#")[0].strip() == "[aliases]"), None)
    if header is None:
        lines += ([""] if lines and lines[-1].strip() else []) + ["[aliases]", entry]
    else:
        lines.insert(header + 1, entry)
    _write(path, lines, before)
    return False


def remove_alias(path: Path, name: str) -> None:
    """Remove the entry ``name``; a :class:`~jarvis_core.errors.UsageError` when there is none."""
    before = _read(path)
    at = _line_of(path, before, name)
    if at is None:
        raise UsageError(f"there is no alias {name!r} in {path} (see 'jarvis aliases list')", argument="NAME")
    lines = before.splitlines()
    del lines[at]
    _write(path, lines, before)
