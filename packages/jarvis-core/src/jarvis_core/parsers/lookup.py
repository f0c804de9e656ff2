"""Finding parsers by name through the plugin registry."""

from __future__ import annotations

from typing import Any, List, Optional

from jarvis_core.errors import UnknownNameError

__all__ = ["get_reasoning_parser", "get_tool_parser", "reasoning_parser_names", "tool_parser_names"]


def _registry(registry: Any) -> Any:
    if registry is not None:
        return registry
    from jarvis_core.plugins import get_registry

    return get_registry()


def _load(kind: str, name: str, registry: Any) -> Any:
    if not isinstance(name, str) or not name.strip():
        raise UnknownNameError(f"{kind} parser", repr(name), _names(kind, registry))
    reg = _registry(registry)
    key = name.strip()
    try:
        return reg.load("parser", f"{kind}:{key}")
    except UnknownNameError:
        alt = key.lower().replace("-", "_")
        if alt == key:
            raise
        return reg.load("parser", f"{kind}:{alt}")


def _names(kind: str, registry: Any) -> List[str]:
    items = _registry(registry).items("parser")
    return sorted(k.partition(":")[2] for k in items if k.startswith(kind + ":"))


def get_tool_parser(name: str, tools: Any = None, *, registry: Any = None, **options: Any) -> Any:
    """A fresh tool-call parser. ``tools`` (ToolSpecs or OpenAI tool dicts) type schema-typed values.

    Raises :class:`~jarvis_core.errors.UnknownNameError` (listing the known names) for an unknown name.
    """
    return _load("tool", name, registry)(tools, **options)


def get_reasoning_parser(name: str, *, registry: Any = None, **options: Any) -> Any:
    """A fresh reasoning parser; options such as ``enable_thinking=False`` or ``chat_template_kwargs={…}``."""
    return _load("reasoning", name, registry)(**options)


def tool_parser_names(registry: Optional[Any] = None) -> List[str]:
    """Every registered tool-parser name (aliases included)."""
    return _names("tool", registry)


def reasoning_parser_names(registry: Optional[Any] = None) -> List[str]:
    """Every registered reasoning-parser name (aliases included)."""
    return _names("reasoning", registry)
