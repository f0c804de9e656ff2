"""A request's ``model`` may be an alias (``[aliases]`` in the config): it becomes the alias's model, with the
alias's options under the request's own. An alias for another engine than the one served is a 400."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from jarvis_core.aliases import apply_alias_options, resolve_alias
from jarvis_server.chat_request import ChatRequest
from jarvis_server.openai_errors import RequestError

if TYPE_CHECKING:
    from jarvis_server.state import ServerState

__all__ = ["unaliased"]


def unaliased(state: ServerState, req: ChatRequest) -> ChatRequest:
    """``req`` with its model resolved through the config's aliases (unchanged when it is no alias)."""
    alias = resolve_alias(state.config, req.model)
    if alias is None:
        return req
    if alias.engine and alias.engine != state.engine_key:
        raise RequestError(f"the alias {req.model!r} names engine {alias.engine!r}; this server serves "
                           f"{state.engine_key!r}", param="model", code="model_not_found")
    temperature, max_tokens, options = apply_alias_options(alias, req.temperature, req.max_tokens, req.options)
    return attrs.evolve(req, model=alias.model, temperature=temperature, max_tokens=max_tokens, options=options)
