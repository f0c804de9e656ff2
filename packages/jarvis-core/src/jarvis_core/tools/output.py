"""Turning what a tool returned into the text the model reads: conversion and the output cap."""

from __future__ import annotations

import json
from typing import Any, Tuple

__all__ = ["cap_output", "to_text"]


def to_text(value: Any) -> str:
    """A tool's return value as text: strings as they are, ``None`` as empty, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def cap_output(text: str, cap: int) -> Tuple[str, bool]:
    """``text`` cut to at most ``cap`` characters, ending with a visible marker; returns ``(text, was_cut)``.

    The marker says how long the output was, so the model knows it saw only the beginning.
    """
    if len(text) <= cap:
        return text, False
    marker = f"\n[output truncated: {len(text)} characters, showing the first {{kept}}]"
    kept = max(0, cap - len(marker.format(kept=cap)))
    return text[:kept] + marker.format(kept=kept), True
