"""Reading the JSON files the prompt-provider commands take (node context, tools, commands), with one-line
errors that name the option and the file."""

from __future__ import annotations

import json
from typing import Any, Optional

__all__ = ["read_json_file"]


def read_json_file(path: str, option: str, *, want: Optional[type] = None) -> Any:
    """The JSON value in ``path`` (``-`` reads stdin); a missing file, bad JSON or (with ``want``) a value of
    another type is a :class:`~jarvis_core.errors.JarvisError` naming ``option`` and the file."""
    import sys

    from jarvis_core.errors import JarvisError

    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except OSError as exc:
        raise JarvisError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise JarvisError(f"{option} {path}: not valid JSON ({exc})") from None
    if want is not None and not isinstance(value, want):
        kind = "a JSON object" if want is dict else "a JSON array" if want is list else want.__name__
        raise JarvisError(f"{option} {path}: expected {kind}, got {type(value).__name__}")
    return value
