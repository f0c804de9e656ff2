"""A request's ``model`` may be an alias (``[aliases]`` in the config): it becomes the alias's model, with the
alias's options under the request's own. An alias for another engine than the one served is a 400.

An agent's configured model may be an alias too: :mod:`jarvis_server.agent_model`.

``GET /v1/models`` lists the aliases this server can answer (those naming no engine or the served one) as
model objects of their own, after the engine's models: ``{"id": alias, "object": "model", "created": 0,
"owned_by": engine, "jarvis": {"alias_of": model, "engine": engine, "options": [names]}}``. Only the names of
the alias's options are shown, never their values (an option may hold something private)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

import attrs

from jarvis_core.aliases import apply_alias_options, resolve_alias
from jarvis_server.agent_model import check_alias_engine
from jarvis_server.chat_request import ChatRequest

if TYPE_CHECKING:
    from jarvis_server.state import ServerState

__all__ = ["alias_models", "unaliased"]


def unaliased(state: ServerState, req: ChatRequest) -> ChatRequest:
    """``req`` with its model resolved through the config's aliases (unchanged when it is no alias)."""
    alias = resolve_alias(state.config, req.model)
    if alias is None:
        return req
    check_alias_engine(req.model, alias, state.engine_key, "model")
    temperature, max_tokens, options = apply_alias_options(alias, req.temperature, req.max_tokens, req.options)
    return attrs.evolve(req, model=alias.model, temperature=temperature, max_tokens=max_tokens, options=options)


def alias_models(state: ServerState) -> List[Dict[str, Any]]:
    """The OpenAI model objects of the config's aliases this server answers (see the module docs)."""
    aliases = getattr(state.config, "aliases", None) or {}
    return [{"id": name, "object": "model", "created": 0, "owned_by": state.engine_key,
             "jarvis": {"alias_of": alias.model, "engine": state.engine_key, "options": sorted(alias.options)}}
            for name, alias in aliases.items() if not alias.engine or alias.engine == state.engine_key]

