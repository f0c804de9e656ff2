"""Building a registered agent: :func:`create_agent`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from jarvis_core.agents.settings import SETTING_NAMES
from jarvis_core.errors import ConfigError, PluginError
from jarvis_core.tools.factory import section_of

if TYPE_CHECKING:
    from jarvis_core.config.schema import JarvisConfig
    from jarvis_core.plugins.registry import Registry

__all__ = ["create_agent"]


def create_agent(
    key: str,
    engine: Any,
    *,
    model: str,
    config: Union[JarvisConfig, Mapping[str, Any], None] = None,
    registry: Optional[Registry] = None,
    **kwargs: Any,
) -> Any:
    """Build the agent registered as ``key``: ``Agent(engine, model=model, config=config, **kwargs)``.

    Keys of the user's ``[agents.<key>]`` table other than the shared settings (``temperature``,
    ``max_tokens``, ``max_turns``, ``system_prompt``, which the agent resolves itself) become keyword
    arguments, unless ``kwargs`` names them: an explicit argument beats the config.

    :raises UnknownNameError: no agent of that name (the message lists the installed ones).
    :raises ConfigError: the table has an option the agent does not accept.
    """
    if registry is None:
        from jarvis_core.plugins.registry import get_registry

        registry = get_registry()
    reg = registry.get("agent", key)
    cls = reg.load()
    if not callable(cls):
        raise PluginError(f"agent {key!r} (from distribution {reg.distribution!r}) is not a class or factory")
    extra = {k: v for k, v in section_of(config, "agents", key).items() if k not in SETTING_NAMES and k not in kwargs}
    try:
        return cls(engine, model=model, config=config, **extra, **kwargs)
    except TypeError as exc:
        if extra:
            raise ConfigError(f"agent {key!r} rejected an option from [agents.{key}] ({', '.join(extra)}): {exc}",
                              key=f"agents.{key}") from None
        raise
