"""Which engine and which model answer a request, when the caller did not build the engine itself.

Used by :class:`jarvis_core.sdk.Jarvis` and ``jarvis ask``/``jarvis chat``. The rules, in order:

1. An engine named by the caller (``--engine``/``engine=``) is used, with ``host`` overriding its address.
2. Else the config's ``[engine] default`` (or ``JARVIS_ENGINE``). If it is not answering and the user opted
   in with ``[engine] fallback = true``, another healthy engine is used instead: announced, and published as
   an ``ENGINE_FALLBACK`` event. Without the opt-in there is no health probe and no substitution: the
   request fails with the engine's own error.
3. Else (nothing configured) the registered engines are probed in parallel (:func:`discover_engines`); the
   first healthy one is used and announced.
4. Else, if ``[engine] auto_embedded`` is on (the default) and the ``embedded`` engine is installed
   (``jarvis-engine-openai-compat[embedded]``), jarvis starts its managed llama.cpp server, announced.
5. Else an :class:`~jarvis_core.errors.EngineConnectionError` says what to do.

The model: the caller's, else ``[engine] model`` in the config, else the first model the engine offers
(announced), else an error asking for one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from jarvis_core.errors import EngineConnectionError, ModelNotFoundError

if TYPE_CHECKING:
    from jarvis_core.config import JarvisConfig
    from jarvis_core.engine.base import InferenceEngine

__all__ = ["EMBEDDED", "EngineChoice", "choose_engine", "describe_engine", "resolve_model"]

log = logging.getLogger(__name__)

#: Registry key of the managed llama.cpp engine (registered by jarvis-engine-openai-compat).
EMBEDDED = "embedded"

#: Receives one human-readable line about a choice made for the user (the CLI prints it on stderr).
Announce = Callable[[str], None]


class EngineChoice:
    """The engine picked for a session and why: ``how`` is ``explicit``, ``configured``, ``fallback``,
    ``discovered`` or ``embedded``."""

    __slots__ = ("engine", "how", "key")

    def __init__(self, key: str, engine: InferenceEngine, how: str) -> None:
        self.key, self.engine, self.how = key, engine, how

    def __repr__(self) -> str:
        return f"EngineChoice({self.key!r}, {self.how})"


def describe_engine(key: str, engine: Any) -> str:
    """``"ollama at http://localhost:11434"`` (or just the key when the engine has no address)."""
    url = getattr(engine, "base_url", None) or getattr(engine, "host", None)
    return f"{key} at {url}" if isinstance(url, str) and url else key


def _log_announce(message: str) -> None:
    log.info("%s", message)


def _overrides(host: Optional[str]) -> Dict[str, Any]:
    # get_engine drops a configured host or base_url when an address is given, so host= always wins.
    return {"host": host} if host else {}


def _close_quietly(engine: Any) -> None:
    try:
        engine.close()
    except Exception:  # closing an engine we are discarding must not hide the real outcome
        log.debug("closing %r failed", engine, exc_info=True)


def _embedded_available(config: JarvisConfig) -> bool:
    from jarvis_core.plugins.registry import get_registry

    return bool(config.engine.auto_embedded) and EMBEDDED in get_registry().items("engine")


def _start_embedded(config: JarvisConfig, announce: Announce, why: str) -> EngineChoice:
    from jarvis_core.engine.factory import create_engine

    announce(f"{why}; starting the embedded llama.cpp server (turn this off with [engine] auto_embedded = false)")
    engine = create_engine(EMBEDDED, **config.engine_options(EMBEDDED))
    return EngineChoice(EMBEDDED, engine, "embedded")


def _nothing_found_error(config: JarvisConfig) -> EngineConnectionError:
    from jarvis_core.discovery import candidate_keys
    from jarvis_core.engine.factory import left_out_plugins

    tried = ", ".join(candidate_keys(config)) or "none installed"
    where = config.path or "~/.jarvis/config.toml"
    return EngineConnectionError(
        f"no inference engine is reachable (probed: {tried}){left_out_plugins()}. Start a server (e.g. 'ollama serve'), "
        f"pass --engine NAME and --host URL, set [engine] default in {where}, or "
        "pip install 'jarvis-engine-openai-compat[embedded]' for the built-in local model"
    )


def choose_engine(
    config: JarvisConfig,
    key: Optional[str] = None,
    *,
    host: Optional[str] = None,
    announce: Optional[Announce] = None,
) -> EngineChoice:
    """Pick and build the engine for a session, following the rules in the module docstring.

    :param key: an engine the caller named (registry key); unknown keys list the available ones.
    :param host: address override for the named (or configured) engine.
    :param announce: receives a line for every choice the caller did not make explicitly (default: logging).
    """
    from jarvis_core.discovery import candidate_keys, discover_engines, get_engine
    from jarvis_core.errors import UsageError

    say = announce or _log_announce
    if key:
        return EngineChoice(key, get_engine(config, key, **_overrides(host)), "explicit")

    default = config.engine.default
    if default:
        engine = get_engine(config, default, **_overrides(host))
        if not config.engine.fallback or engine.health():
            return EngineChoice(default, engine, "configured")
        requested = describe_engine(default, engine)
        _close_quietly(engine)
        others = [k for k in candidate_keys(config) if k != default]
        found = discover_engines(config, keys=others) if others else []
        for _k, other in found[1:]:
            _close_quietly(other)
        if found:
            used_key, used = found[0]
            choice = EngineChoice(used_key, used, "fallback")
        elif _embedded_available(config):
            choice = _start_embedded(config, say, f"{requested} is not answering and no other engine is")
        else:
            raise EngineConnectionError(
                f"{requested} is not answering and no other engine is reachable; start it, or point "
                f"[engine.{default}] host at it",
                engine_id=default,
            )
        from jarvis_core.events import EventType, publish

        if choice.how == "fallback":
            say(f"{requested} is not answering; falling back to {describe_engine(choice.key, choice.engine)} "
                "([engine] fallback = true)")
        publish(EventType.ENGINE_FALLBACK, requested=default, used=choice.key, reason="unhealthy")
        return choice

    if host:
        raise UsageError("--host needs --engine too: which kind of server runs there? (e.g. --engine ollama)",
                         argument="--host")

    found = discover_engines(config)
    if found:
        (used_key, used), rest = found[0], found[1:]
        for _k, other in rest:
            _close_quietly(other)
        say(f"using {describe_engine(used_key, used)} (found by probing; pin it with [engine] default or --engine)")
        return EngineChoice(used_key, used, "discovered")
    if _embedded_available(config):
        return _start_embedded(config, say, "no engine server is reachable")
    raise _nothing_found_error(config)


def configured_model(config: JarvisConfig) -> Optional[str]:
    """The model named in the config (``[engine] model``), if the config has that setting."""
    return config.engine.model or None


def _unaliased(config: Optional[JarvisConfig], model: str) -> str:
    from jarvis_core.aliases import resolve_alias

    alias = resolve_alias(config, model)
    return alias.model if alias is not None else model


def resolve_model(
    engine: InferenceEngine,
    key: str,
    config: Optional[JarvisConfig] = None,
    model: Optional[str] = None,
    *,
    announce: Optional[Announce] = None,
) -> str:
    """The model to use: ``model``, else the config's, else the first the engine offers (announced); an alias
    (``[aliases]``) becomes its model."""
    if model:
        return _unaliased(config, model)
    if config is not None:
        configured = configured_model(config)
        if configured:
            return _unaliased(config, configured)
    models = engine.list_models()
    if not models:
        raise ModelNotFoundError(
            f"{describe_engine(key, engine)} offers no models; pass --model NAME "
            "(and make the server load it, e.g. 'ollama pull NAME')",
            engine_id=key,
        )
    chosen = models[0]
    more = f" of {len(models)}" if len(models) > 1 else ""
    (announce or _log_announce)(f"model {chosen} (the first{more} offered by {key}; choose with --model)")
    return chosen
