"""The model an agent runs on ``jarvis serve`` (its agent chat and managed agents): the one named, else its
``[agents.<key>] model``; an alias resolved the way the SDK and ``jarvis ask --agent`` resolve it
(:func:`jarvis_core.agents.factory.agent_model_alias`), and refused when it names another engine than the
served one."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from jarvis_core.agents.factory import agent_model_alias, configured_model
from jarvis_core.aliases import ModelAlias
from jarvis_server.openai_errors import RequestError

__all__ = ["agent_model", "check_alias_engine"]


def check_alias_engine(name: str, alias: ModelAlias, engine_key: Optional[str], param: str) -> None:
    """A 400 on ``param`` when the alias ``name`` names another engine than ``engine_key`` (the served one)."""
    if alias.engine and engine_key is not None and alias.engine != engine_key:
        raise RequestError(f"the alias {name!r} names engine {alias.engine!r}; this server serves {engine_key!r}",
                           param=param, code="model_not_found")


def agent_model(config: Any, engine_key: Optional[str], agent_key: str, model: Optional[str] = None,
                *, param: str = "model") -> Tuple[Optional[str], Optional[ModelAlias]]:
    """The model agent ``agent_key`` runs on this server: ``model`` when given, else its ``[agents.<key>] model``
    (``None`` when neither names one), an alias resolved; and the alias, whose options go under the request's.
    An alias naming another engine than ``engine_key`` (the served one) is a 400 on ``param``."""
    name, alias = agent_model_alias(agent_key, config, model)
    if alias is not None:
        check_alias_engine(model or configured_model(agent_key, config) or alias.model, alias, engine_key, param)
    return name, alias
