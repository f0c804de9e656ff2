"""How :class:`~jarvis_core.sdk.Jarvis` answers through an agent or a prompt provider.

The facade (:mod:`jarvis_core.sdk`) asks the engine directly; when a request names an agent (or the config
has ``[agent] default``) or a prompt provider, these functions build what runs it for that one request: the
tools from the registry with their ``[tools.<key>]`` options, the agent with the request's settings, the
provider's session. They read the :class:`~jarvis_core.request_scope.RequestScope` the ``Jarvis`` object hands
them (its engine, model, config, bus and approver), never the object itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

import attrs

from jarvis_core.answer import Answer
from jarvis_core.request_scope import DEFAULT_MAX_TOKENS, DEFAULT_SYSTEM_PROMPT, Prompt, RequestScope

if TYPE_CHECKING:
    from jarvis_core.engine.base import InferenceEngine
    from jarvis_core.prompts.session import PromptSession
    from jarvis_core.types import Message

__all__ = ["agent_failure", "agent_for_request", "run_agent", "ask_with_provider", "build_agent", "own_model_agent",
           "provider_agent", "requested_agent", "role_of", "split_prompt"]


def requested_agent(scope: RequestScope, agent: Optional[str] = None) -> Optional[str]:
    """The key of the agent a request runs (see :meth:`RequestScope.requested_agent`)."""
    return scope.requested_agent(agent)


def own_model_agent(scope: RequestScope, agent: Optional[str] = None) -> Optional[str]:
    """The key of the agent a request would run when that agent runs a model of its own
    (``uses_engine = False``), else ``None``: the caller then needs no engine for the request."""
    from jarvis_core.plugins.registry import get_registry

    key = scope.requested_agent(agent)
    registry = get_registry()
    if not key or key not in registry.items("agent"):
        return None
    return None if getattr(registry.load("agent", key), "uses_engine", True) else key


def agent_for_request(
    scope: RequestScope,
    agent: Optional[str],
    tools: Optional[Sequence[str]],
    *,
    model: Optional[str] = None,
    system: Optional[str] = None,
    temperature: Optional[float] = None,
    max_tokens: Optional[int] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> Tuple[Optional[str], Optional[Any]]:
    """The agent to run (key and instance, built for this request), or ``(None, None)`` to ask the engine.

    Tools are built with :func:`~jarvis_core.tools.create_tool` (their ``[tools.<key>]`` options and the
    engine, model, jarvis home and bus), the agent with :func:`~jarvis_core.agents.create_agent`; the
    request's system prompt, temperature and max tokens are the agent's explicit settings, and its other
    ``options`` are the agent's keyword arguments (its own, such as ``mode``, or engine options, which the
    agent checks against the engine's allow-list).

    :raises InvalidOptionError: the agent (or, through it, the engine) does not take one of ``options``.
    """
    from jarvis_core.errors import UnknownNameError, UsageError
    from jarvis_core.plugins.registry import get_registry

    registry = get_registry()
    tool_keys = list(scope.tool_keys if tools is None else tools)
    for k in tool_keys:
        registry.get("tool", k)  # unknown -> lists the available ones
    key = scope.requested_agent(agent)
    if not key:
        if tool_keys:
            available = sorted(registry.items("agent"))
            hint = f"pass --agent NAME (available: {', '.join(available)})" if available else (
                "install an agents plugin (pip install jarvis-agents) and pass --agent NAME")
            raise UsageError(f"tools need an agent to run them; {hint}", argument="--agent")
        return None, None
    if key not in registry.items("agent"):
        raise UnknownNameError("agent", key, list(registry.items("agent")))
    from jarvis_core.agents.factory import agent_model, agent_model_alias
    from jarvis_core.agents.settings import resolve_settings
    from jarvis_core.aliases import apply_alias_options

    config = scope.config
    cls = registry.load("agent", key)
    requested = model or scope.model_given  # the request's model, else the one the Jarvis object was given
    engine: Optional[InferenceEngine] = None
    if getattr(cls, "uses_engine", True):
        # [agents.<key>] model when the request names none; an alias there brings its engine and options.
        name, alias = agent_model_alias(key, config, requested)
        if alias is not None and alias.engine and scope.use_engine is not None:
            scope.use_engine(alias.model, alias.engine)
        engine, engine_key, use_model = scope.use(name)
        temperature, max_tokens, options = apply_alias_options(alias, temperature, max_tokens, options or {})
    else:  # a runtime with its own model: no engine is picked, probed or started for it
        engine_key, use_model = key, agent_model(cls, key, requested, config)
    tool_objs = _tools(scope, tool_keys, engine, use_model)
    system_text = scope.system_prompt if system is None else system
    if system is None and system_text == DEFAULT_SYSTEM_PROMPT:
        # Our neutral default must not beat a prompt from [agents.<key>] or the agent class.
        if resolve_settings(cls, getattr(cls, "agent_id", "") or key, {}, config).system_prompt is not None:
            system_text = None
    kwargs: Dict[str, Any] = {"system_prompt": system_text or None, "temperature": temperature,
                              "max_tokens": max_tokens, "bus": scope.bus, "approver": scope.approver}
    if tool_objs:
        kwargs["tools"] = tool_objs
    return key, build_agent(key, engine, engine_key, dict(options or {}), model=use_model,
                             config=config, registry=registry, **kwargs)


def _tools(scope: RequestScope, tools: Sequence[Any], engine: Optional[InferenceEngine], model: str) -> List[Any]:
    """Registered tool keys built for one request (their ``[tools.<key>]`` options, the engine, model, jarvis
    home and bus); anything else (a tool spec given directly) as it is."""
    from jarvis_core.config import jarvis_home
    from jarvis_core.plugins.registry import get_registry
    from jarvis_core.tools.factory import create_tool

    registry = get_registry()
    return [create_tool(t, config=scope.config, registry=registry, engine=engine, model=model, home=jarvis_home(),
                        bus=scope.bus) if isinstance(t, str) else t for t in tools]


def ask_with_provider(scope: RequestScope, prompt: Prompt, name: str, *, model: Optional[str], system: Optional[str],
                       agent: Optional[str], tools: Optional[Sequence[Any]], node_context: Any, timezone: Any,
                       available_commands: Any, temperature: Optional[float], max_tokens: Optional[int],
                       options: Dict[str, Any]) -> Answer:
    """One request shaped and read by a prompt provider (see :meth:`ask_full`)."""
    from jarvis_core.errors import UsageError
    from jarvis_core.prompts.lookup import AUTO, choose_provider
    from jarvis_core.prompts.session import PromptSession

    if system is not None:
        raise UsageError("the prompt provider builds the system prompt; do not pass one as well", argument="system")
    engine, engine_key, use_model = scope.use(model)
    is_auto = name.strip().lower() == AUTO
    user_rules = None if not is_auto or scope.config is None else scope.config.model_defaults
    provider, choice = choose_provider(name, model=use_model, backend=engine_key, user_rules=user_rules)
    if choice is not None:
        from jarvis_core.engine_choice import _log_announce

        (scope.announce or _log_announce)(choice.describe())
    # Registered tool keys, or tool specs (ToolSpec values, OpenAI dicts) given directly.
    specs = _tools(scope, scope.tool_keys if tools is None else tools, engine, use_model)
    session = PromptSession(provider, specs, node_context, timezone, available_commands)
    agent_key = agent or scope.agent_key
    if agent_key:
        return provider_agent(scope, agent_key, session, prompt, specs, (engine, engine_key, use_model), temperature,
                              max_tokens)
    from jarvis_core.prompts.direct import ask_direct

    answer = ask_direct(session, engine, prompt, model=use_model, temperature=temperature,
                        max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens, **options)
    return attrs.evolve(
        Answer.from_completion(answer.read.completion, engine=engine_key), usage=answer.usage,
        prompt_provider=provider.name, jarvis_json=answer.read.reply, model_calls=answer.model_calls,
        tools_loaded=answer.tools_loaded)


def provider_agent(scope: RequestScope, key: str, session: PromptSession, prompt: Prompt, tools: List[Any],
                   used: Tuple[InferenceEngine, str, str], temperature: Optional[float],
                   max_tokens: Optional[int]) -> Answer:
    """Run agent ``key`` with the provider's session; only agents that declare ``accepts_prompt_session``
    take one (the others build their own prompts, so combining them is an error, not a silent choice).
    The agent is built like any other (its ``[agents.<key>]`` options, the bus, the approver)."""
    from jarvis_core.agents.factory import create_agent
    from jarvis_core.errors import UsageError
    from jarvis_core.plugins.registry import get_registry
    from jarvis_core.types import AgentContext

    registry = get_registry()
    cls = registry.load("agent", key)
    if not getattr(cls, "accepts_prompt_session", False):
        raise UsageError(f"agent {key!r} builds its own prompts and takes no prompt provider; drop "
                         "--prompt-provider, or use --agent prompt_driven (jarvis_core.prompts.PromptDrivenAgent)")
    engine, engine_key, model = used
    runner = create_agent(key, engine, model=model, config=scope.config, registry=registry, tools=tools,
                          prompt_session=session, bus=scope.bus, approver=scope.approver, temperature=temperature,
                          max_tokens=max_tokens)
    text, history = split_prompt(prompt)
    result = run_agent(key, runner, text, AgentContext(messages=tuple(history)))
    return Answer.from_agent_result(result, model=model, engine=engine_key, agent=key,
                                    prompt_provider=session.provider.name)


def agent_failure(key: str, exc: BaseException) -> BaseException:
    """What an agent's run raised, as the caller should see it: jarvis' own errors as they are, anything else
    as a :class:`~jarvis_core.errors.PluginError` naming the agent key, its plugin and distribution, and the
    part that raised it (an engine, tool or prompt provider of another plugin) when that is not the agent."""
    from jarvis_core.errors import JarvisError
    from jarvis_core.plugins.registry import get_registry

    registry = get_registry()
    if isinstance(exc, JarvisError) or key not in registry.items("agent"):
        return exc
    from jarvis_core.plugins.blame import blamed_part, run_failure

    reg = registry.get("agent", key)
    return run_failure(reg, exc, blamed_part(reg, exc, registry))


def run_agent(key: str, runner: Any, text: str, context: Any) -> Any:
    """``runner.run(text, context)``; a failure that is not jarvis' own names the agent's plugin."""
    try:
        return runner.run(text, context)
    except Exception as exc:
        failure = agent_failure(key, exc)
        if failure is exc:
            raise
        raise failure from exc


def role_of(message: Any) -> str:
    role = message.get("role") if isinstance(message, dict) else getattr(message, "role", None)
    return str(getattr(role, "value", role))


def split_prompt(prompt: Prompt) -> Tuple[str, List[Message]]:
    """An agent's input: the last user message's text, and the conversation before it."""
    from jarvis_core.engine.messages import coerce_messages

    if isinstance(prompt, str):
        return prompt, []
    convo = coerce_messages(list(prompt))
    for i in range(len(convo) - 1, -1, -1):
        if role_of(convo[i]) == "user":
            return convo[i].text or "", convo[:i]
    return "", convo


#: What the SDK itself gives an agent; a request option of the same name would be ambiguous.
_AGENT_ARGUMENTS = frozenset({"system_prompt", "bus", "approver", "config", "registry", "tools", "model", "engine"})


def build_agent(key: str, engine: Any, engine_key: str, options: Dict[str, Any], **kwargs: Any) -> Any:
    """``create_agent`` with a request's extra ``options`` as keyword arguments; an option neither the agent
    nor the engine takes is an :class:`~jarvis_core.errors.InvalidOptionError` naming it, never dropped."""
    from jarvis_core.agents.factory import create_agent
    from jarvis_core.errors import InvalidOptionError

    clash = sorted(set(options) & _AGENT_ARGUMENTS)
    if clash:
        raise InvalidOptionError(engine_key, clash, message=(
            f"option(s) {', '.join(map(repr, clash))} cannot be passed to agent {key!r} as request options; "
            "use system= for the system prompt, and Jarvis(...) for the tools, approver and bus"))
    try:
        return create_agent(key, engine, **kwargs, **options)
    except TypeError as exc:
        if not options:
            raise
        raise InvalidOptionError(engine_key, sorted(options), message=(
            f"agent {key!r} does not take option(s) {', '.join(map(repr, sorted(options)))}: {exc}")) from None
