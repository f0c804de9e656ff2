"""Agent settings and their precedence.

For ``temperature``, ``max_tokens``, ``max_turns`` and ``system_prompt`` the value comes from, first to
last: the constructor argument; the user's ``[agents.<key>]`` table (and, for ``max_turns`` only, the
older ``[agent] max_turns``); the agent class's ``default_<name>`` attribute; :data:`CORE_DEFAULTS`. So
anything the user configured (``[agent] max_turns`` included) beats the class default, and a class default
beats only the core default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Union

import attrs

from jarvis_core.errors import ConfigError
from jarvis_core.tools.factory import section_of

if TYPE_CHECKING:
    from jarvis_core.config.schema import JarvisConfig

__all__ = ["CORE_DEFAULTS", "SETTING_NAMES", "AgentSettings", "resolve_settings"]

#: The last resort for each setting. ``None`` means "not sent": the engine uses its own default.
CORE_DEFAULTS: Mapping[str, Any] = {"temperature": None, "max_tokens": None, "max_turns": 10, "system_prompt": None}
SETTING_NAMES = tuple(CORE_DEFAULTS)


@attrs.frozen
class AgentSettings:
    """The effective settings of an agent, and where each came from (``sources[name]`` is ``argument``,
    ``[agents.<key>]``, ``[agent]``, ``class`` or ``core``)."""

    temperature: Optional[float] = None
    max_tokens: Optional[int] = None
    max_turns: int = 10
    system_prompt: Optional[str] = None
    sources: Mapping[str, str] = attrs.field(factory=dict)


def _check(name: str, value: Any, where: str) -> Any:
    key = f"{where}.{name}" if where.startswith("agents.") else name
    if name in ("max_turns", "max_tokens"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a whole number of at least 1, got {value!r}", key=key)
    elif name == "temperature":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2:
            raise ConfigError(f"temperature must be a number from 0 to 2, got {value!r}", key=key)
        value = float(value)
    elif name == "system_prompt" and not isinstance(value, str):
        raise ConfigError(f"system_prompt must be text, got {type(value).__name__}", key=key)
    return value


def resolve_settings(
    agent_cls: type,
    agent_key: str,
    explicit: Mapping[str, Any],
    config: Union[JarvisConfig, Mapping[str, Any], None],
) -> AgentSettings:
    """Apply the precedence to each setting.

    :param agent_cls: the agent class (its ``default_<name>`` attributes are the class defaults).
    :param agent_key: the registry key, which names the ``[agents.<key>]`` table.
    :param explicit: the constructor arguments (``None`` = not given).
    :param config: a :class:`~jarvis_core.config.JarvisConfig`, the agent's own table as a mapping, or ``None``.
    :raises ConfigError: a value has the wrong type or range; the message names the key.
    """
    section = section_of(config, "agents", agent_key)
    legacy_turns = None
    agent_table = getattr(config, "agent", None)
    if agent_table is not None:
        legacy_turns = getattr(agent_table, "max_turns", None)
    values: Dict[str, Any] = {}
    sources: Dict[str, str] = {}
    for name in SETTING_NAMES:
        candidates = [
            (explicit.get(name), "argument", "argument"),
            (section.get(name), f"[agents.{agent_key}]", f"agents.{agent_key}"),
        ]
        if name == "max_turns":
            candidates.append((legacy_turns, "[agent]", "agent"))
        candidates.append((getattr(agent_cls, f"default_{name}", None), "class", "class"))
        for value, source, where in candidates:
            if value is not None:
                values[name] = _check(name, value, where)
                sources[name] = source
                break
        else:
            values[name] = CORE_DEFAULTS[name]
            sources[name] = "core"
    return AgentSettings(sources=sources, **values)
