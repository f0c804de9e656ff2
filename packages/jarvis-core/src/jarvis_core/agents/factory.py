"""Building a registered agent: :func:`create_agent`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Tuple, Union

from jarvis_core.agents.settings import SETTING_NAMES
from jarvis_core.errors import ConfigError, InvalidOptionError, PluginError
from jarvis_core.tools.factory import section_of

if TYPE_CHECKING:
    from jarvis_core.aliases import ModelAlias
    from jarvis_core.config.schema import JarvisConfig
    from jarvis_core.plugins.registry import Registry

__all__ = ["agent_model", "agent_model_alias", "configured_model", "create_agent"]


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
    # ``model`` in the table is the caller's to read (configured_model): it becomes model=, never an extra.
    extra = {k: v for k, v in section_of(config, "agents", key).items()
             if k not in SETTING_NAMES and k not in kwargs and k != "model"}
    try:
        return cls(engine, model=model, config=config, **extra, **kwargs)
    except InvalidOptionError as exc:
        named = [n for n in exc.names if n in extra]
        if not named:
            raise
        raise ConfigError(f"agent {key!r} rejected an option from [agents.{key}] ({', '.join(named)}): neither the "
                          f"agent nor the engine takes it", key=f"agents.{key}.{named[0]}") from None
    except TypeError as exc:
        if extra:
            raise ConfigError(f"agent {key!r} rejected an option from [agents.{key}] ({', '.join(extra)}): {exc}",
                              key=f"agents.{key}") from None
        raise


def configured_model(key: str, config: Union[JarvisConfig, Mapping[str, Any], None]) -> Optional[str]:
    """``model`` of the ``[agents.<key>]`` table: the model this agent runs unless a request names one.

    :raises ConfigError: it is not a non-empty string.
    """
    value = section_of(config, "agents", key).get("model")
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(f"[agents.{key}] model must be a model id, got {value!r}", key=f"agents.{key}.model")
    return value


def agent_model_alias(
    key: str, config: Union[JarvisConfig, Mapping[str, Any], None], model: Optional[str] = None,
) -> Tuple[Optional[str], Optional[ModelAlias]]:
    """The model agent ``key`` runs, and the alias that named it: ``model`` when given, else ``[agents.<key>]
    model``; when that is an alias (``[aliases]``), its model and the alias, whose options are cut to those the
    agent's own table does not set (the table beats the alias, as an explicit argument beats both: merge them
    with :func:`~jarvis_core.aliases.apply_alias_options`). ``(None, None)`` when neither names a model.

    Every place that runs an agent with its configured model (the SDK and ``jarvis ask --agent``, the server's
    agent chat and managed agents) resolves it here, so an alias means the same everywhere.

    :raises ConfigError: ``[agents.<key>] model`` is not a non-empty string.
    """
    from jarvis_core.aliases import ModelAlias, resolve_alias
    from jarvis_core.config.schema import JarvisConfig

    name = model or configured_model(key, config)
    alias = resolve_alias(config, name) if isinstance(config, JarvisConfig) else None
    if alias is None:
        return name, None
    table = section_of(config, "agents", key)
    return alias.model, ModelAlias(alias.model, alias.engine, {k: v for k, v in alias.options.items()
                                                                if k not in table})


def agent_model(cls: Any, key: str, model: Optional[str], config: Union[JarvisConfig, Mapping[str, Any], None]) -> str:
    """The model of an agent class that does not use the engine (``uses_engine = False``): ``model`` when
    given, else ``[agents.<key>] model`` (an alias becomes its model), else the class's ``default_model``.

    :raises UsageError: none of the three names one (the message says where to set it).
    """
    from jarvis_core.errors import UsageError

    chosen = agent_model_alias(key, config, model)[0] or getattr(cls, "default_model", None)
    if not chosen:
        raise UsageError(f"agent {key!r} runs a model of its own and none is set: pass --model NAME (model= in "
                         f"Python) or set model in [agents.{key}]", argument="--model")
    return str(chosen)
