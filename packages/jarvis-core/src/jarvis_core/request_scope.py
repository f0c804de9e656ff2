"""What one request of :class:`~jarvis_core.sdk.Jarvis` is built from, handed to the code that builds it.

The facade answers through an agent or a prompt provider with :mod:`jarvis_core.sdk_agents`; that code
reads nothing of the ``Jarvis`` object but the frozen :class:`RequestScope` it is given, and imports nothing
from :mod:`jarvis_core.sdk`. The defaults both modules apply live here for the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Sequence, Tuple, Union

import attrs

if TYPE_CHECKING:
    from jarvis_core.config import JarvisConfig
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_core.engine_choice import Announce
    from jarvis_core.events import EventBus
    from jarvis_core.tools.executor import Approver
    from jarvis_core.types import MessageLike

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_SYSTEM_PROMPT", "AliasEngine", "EngineUse", "Prompt", "RequestScope"]

#: Small models answer far better with a system prompt; this one is neutral.
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
#: The answer length limit of a direct request when the caller gives none.
DEFAULT_MAX_TOKENS = 1024

#: A question: text, or a whole conversation (``Message`` objects or OpenAI-style dicts).
Prompt = Union[str, Sequence["MessageLike"]]

#: ``use(model)`` -> engine, its registry key and the model for one request: ``model`` when given (the engine
#: is picked, the default model is not resolved), else the connection's (picked and resolved on first use).
EngineUse = Callable[[Optional[str]], Tuple["InferenceEngine", str, str]]
#: ``use_engine(model, engine)``: an alias for ``model`` names ``engine``: pick that one when none is picked
#: yet, else raise :class:`~jarvis_core.errors.UsageError` when another is in use.
AliasEngine = Callable[[str, str], None]


@attrs.frozen
class RequestScope:
    """The ``Jarvis`` object's side of a request: how to get the engine, and what it was given.

    ``config`` is ``None`` for a borrowed engine with no config given: the user's config file is then not
    read behind the caller's back (no ``[agent] default``, no ``[tools.<key>]`` options, no user rules).
    """

    use: EngineUse
    config: Optional[JarvisConfig]
    system_prompt: Optional[str] = None
    agent_key: Optional[str] = None
    tool_keys: Tuple[str, ...] = ()
    model_given: Optional[str] = None
    bus: Optional[EventBus] = None
    approver: Optional[Approver] = None
    announce: Optional[Announce] = None
    #: For an agent whose configured model is an alias naming an engine (``None``: no engine switch).
    use_engine: Optional[AliasEngine] = None

    def requested_agent(self, agent: Optional[str] = None) -> Optional[str]:
        """The key of the agent a request runs: ``agent``, else the ``Jarvis`` object's, else ``[agent]
        default`` (not without a config), else ``None`` (the engine answers)."""
        return agent or self.agent_key or (None if self.config is None else self.config.agent.default)
