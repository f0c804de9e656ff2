"""Reading a TOML config file and remembering on which line each key was written.

``tomllib`` returns plain dicts with no positions, yet every config error must name the line of the key.
:func:`key_lines` is a small scanner over the same text that records, for each key path (``("engine",
"ollama", "host")``), the line where it was written: table headers, dotted keys and quoted keys are
understood; multi-line strings and arrays are skipped. Keys inside inline tables are attributed to the
line of the key that holds the inline table (see :meth:`TomlSource.line_of`).
"""

from __future__ import annotations

import re
import sys
from typing import Any, Dict, List, Optional, Tuple

from jarvis_core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["KeyPath", "TomlSource", "key_lines", "parse_toml"]

KeyPath = Tuple[str, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


class TomlSource:
    """A parsed config file: its data, its path and where each key was written."""

    def __init__(self, data: Dict[str, Any], *, path: Optional[str], lines: Dict[KeyPath, int]) -> None:
        self.data = data
        self.path = path
        self.lines = lines

    def line_of(self, path: KeyPath) -> Optional[int]:
        """The line of ``path``, else of its nearest written parent (keys inside inline tables)."""
        for end in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None


def parse_toml(text: str, *, path: Optional[str]) -> TomlSource:
    """Parse ``text``; a syntax error becomes a :class:`ConfigError` naming the file and the line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line = _describe_decode_error(exc, text)
        raise ConfigError(f"invalid TOML: {message}", path=path, line=line) from None
    return TomlSource(data, path=path, lines=key_lines(text))


def _describe_decode_error(exc: Exception, text: str) -> Tuple[str, Optional[int]]:
    raw = str(exc)
    line = getattr(exc, "lineno", None)  # Python >= 3.14 and recent tomli expose it
    column = getattr(exc, "colno", None)
    match = _POSITION.search(raw)
    if line is None and match:
        line, column = int(match.group(1)), int(match.group(2))
    if line is None and "end of document" in raw:
        line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    message = _POSITION.sub("", raw).replace("(at end of document)", "").strip()
    msg = getattr(exc, "msg", None)
    if isinstance(msg, str) and msg:
        message = msg
    if column:
        message = f"{message} (column {column})"
    return message, line


# -- the key scanner ---------------------------------------------------------------------------------


def key_lines(text: str) -> Dict[KeyPath, int]:
    """Map every key path written in ``text`` (tables and keys) to its 1-based line number.

    Best effort by design: it is only used to point at lines in error messages, and ``tomllib`` has
    already accepted the text, so the scanner can assume it is well formed.
    """
    lines: Dict[KeyPath, int] = {}
    table: KeyPath = ()
    scanner = _ValueScanner()
    for number, line in enumerate(text.splitlines(), start=1):
        if scanner.busy:  # still inside a multi-line string or array that began on an earlier line
            scanner.feed(line)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            is_array = stripped.startswith("[[")
            inner = stripped[2:] if is_array else stripped[1:]
            keys, _ = _parse_key(inner)
            if keys:
                table = tuple(keys)
                lines.setdefault(table, number)
            continue
        keys, rest = _parse_key(stripped)
        if not keys or not rest.lstrip().startswith("="):
            continue
        full = table + tuple(keys)
        for end in range(len(table) + 1, len(full) + 1):
            lines.setdefault(full[:end], number)
        scanner.feed(rest.lstrip()[1:])
    return lines


def _parse_key(text: str) -> Tuple[List[str], str]:
    """Parse a (possibly dotted, possibly quoted) key at the start of ``text``; return it and the rest."""
    keys: List[str] = []
    i = 0
    n = len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        ch = text[i]
        if ch == '"':
            end = i + 1
            buf = []
            while end < n and text[end] != '"':
                if text[end] == "\\" and end + 1 < n:
                    buf.append(text[end + 1])
                    end += 2
                    continue
                buf.append(text[end])
                end += 1
            keys.append("".join(buf))
            i = end + 1
        elif ch == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            keys.append(text[i + 1 : end])
            i = end + 1
        else:
            match = _BARE.match(text, i)
            if not match:
                break
            keys.append(match.group(0))
            i = match.end()
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == ".":
            i += 1
            continue
        break
    return keys, text[i:]


class _ValueScanner:
    """Tracks whether a value continues on the next line (multi-line string, or an open array/table)."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string: Optional[str] = None  # '"""' or "'''" while inside a multi-line string

    @property
    def busy(self) -> bool:
        return self.depth > 0 or self.in_string is not None

    def feed(self, text: str) -> None:
        i = 0
        n = len(text)
        while i < n:
            if self.in_string is not None:
                end = text.find(self.in_string, i)
                if end < 0:
                    return
                i = end + 3
                self.in_string = None
                continue
            ch = text[i]
            if text.startswith('"""', i) or text.startswith("'''", i):
                self.in_string = text[i : i + 3]
                i += 3
            elif ch == '"':
                i = _skip_basic_string(text, i + 1)
            elif ch == "'":
                end = text.find("'", i + 1)
                i = n if end < 0 else end + 1
            elif ch in "[{":
                self.depth += 1
                i += 1
            elif ch in "]}":
                self.depth = max(0, self.depth - 1)
                i += 1
            elif ch == "#":
                return
            else:
                i += 1


def _skip_basic_string(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return n
