"""Finding engines: build the one asked for, probe many in parallel, list their models.

* :func:`get_engine` builds exactly the engine asked for (or the configured default). It never swaps in
  another one.
* Falling back to another engine is opt-in (``[engine] fallback = true``) and announced; that policy lives
  in :mod:`jarvis_core.engine_choice`, built on the functions here.
* :func:`discover_engines` / :func:`probe_engines` health-check many engines at once, each in its own
  thread, so N unreachable engines cost about one health timeout, not N. Engines not returned are closed.
* :func:`discover_models` lists models in parallel and reports each engine's failure in ``.errors``.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import attrs

from jarvis_core.errors import ConfigError, EngineConnectionError, JarvisError

if TYPE_CHECKING:
    from jarvis_core.config import JarvisConfig
    from jarvis_core.engine.base import InferenceEngine

__all__ = [
    "DEFAULT_HEALTH_TIMEOUT",
    "DEFAULT_MODELS_TIMEOUT",
    "EngineStatus",
    "ModelListing",
    "candidate_keys",
    "discover_engines",
    "discover_models",
    "get_engine",
    "probe_engines",
]

log = logging.getLogger(__name__)

#: Health timeout assumed for engines that do not declare one (``HTTPEngine.health_timeout``).
DEFAULT_HEALTH_TIMEOUT = 2.0
#: Seconds :func:`discover_models` waits for every engine together.
DEFAULT_MODELS_TIMEOUT = 15.0


@attrs.frozen
class EngineStatus:
    """What a probe found out about one engine (``jarvis engines`` prints these)."""

    key: str
    healthy: bool
    host: Optional[str] = None
    default: bool = False
    configured: bool = False
    error: Optional[str] = None
    description: str = ""
    distribution: str = ""

    def to_dict(self) -> Dict[str, Any]:
        """Plain data for JSON; never holds a secret."""
        return attrs.asdict(self)


class ModelListing(Dict[str, List[str]]):
    """``engine key -> model ids`` for the engines that answered; ``errors`` holds the others' failures."""

    def __init__(self) -> None:
        super().__init__()
        #: engine key -> the error it raised (or a timeout error)
        self.errors: Dict[str, BaseException] = {}


# -- one engine ----------------------------------------------------------------------------------------


def _load_config(config: Optional[JarvisConfig]) -> JarvisConfig:
    if config is not None:
        return config
    from jarvis_core.config import load_config

    return load_config()


def _options(config: JarvisConfig, key: str, overrides: Dict[str, Any]) -> Dict[str, Any]:
    options = config.engine_options(key)
    given = {k: v for k, v in overrides.items() if v is not None}
    if "host" in given or "base_url" in given:
        options.pop("host", None)  # an address given now replaces the configured one, whichever alias
        options.pop("base_url", None)
    options.update(given)
    return options


def get_engine(config: Optional[JarvisConfig] = None, key: Optional[str] = None, **overrides: Any) -> InferenceEngine:
    """Build the engine ``key`` (default: the configured default engine) from its config section.

    ``overrides`` (e.g. ``host=`` from ``--host``) beat the config and the environment; ``None`` values are
    ignored. No health check and no fallback: the caller gets the engine it asked for.

    :raises ConfigError: no key given and no default engine configured.
    :raises UnknownNameError: no engine of that name is installed (the message lists the installed ones).
    """
    from jarvis_core.engine.factory import create_engine
    from jarvis_core.plugins.registry import get_registry

    config = _load_config(config)
    key = key or config.engine.default
    if not key:
        installed = ", ".join(sorted(get_registry().items("engine"))) or "none installed"
        raise ConfigError(
            "no engine selected: pass --engine KEY, set JARVIS_ENGINE, or write [engine] default = \"KEY\" in "
            f"the config file (installed engines: {installed})",
            path=config.path,
        )
    return create_engine(key, **_options(config, key, overrides))


# -- many engines --------------------------------------------------------------------------------------


def candidate_keys(config: JarvisConfig) -> List[str]:
    """Engines worth probing: the configured ones (default first), then every installed engine not
    registered with ``discoverable=False``, alphabetically."""
    from jarvis_core.plugins.registry import get_registry

    configured = list(config.configured_engines())
    installed = get_registry().items("engine")
    rest = sorted(k for k, reg in installed.items() if k not in configured and reg.extra.get("discoverable", True))
    return configured + rest


class _Call(threading.Thread):
    """Runs one function in a daemon thread (a stuck engine must never keep the process alive)."""

    def __init__(self, fn: Callable[[], Any], on_abandoned: Callable[[], None]) -> None:
        super().__init__(daemon=True, name="jarvis-discovery")
        self._fn = fn
        self._on_abandoned = on_abandoned
        self._lock = threading.Lock()
        self.finished = False
        self.abandoned = False
        self.result: Any = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.result = self._fn()
        except BaseException as exc:  # reported to the caller, not lost
            self.error = exc
        with self._lock:
            self.finished = True
            abandoned = self.abandoned
        if abandoned:
            self._on_abandoned()

    def abandon(self) -> bool:
        """Give up waiting; returns False if the call finished after all (its result is usable)."""
        with self._lock:
            if self.finished:
                return False
            self.abandoned = True
            return True


def _run_parallel(calls: Dict[str, _Call], deadline: float) -> Dict[str, _Call]:
    """Start every call, wait until all finish or ``deadline`` (monotonic) passes; return the unfinished."""
    for call in calls.values():
        call.start()
    for call in calls.values():
        call.join(max(0.0, deadline - time.monotonic()))
    return {key: call for key, call in calls.items() if call.abandon()}


def probe_engines(
    config: Optional[JarvisConfig] = None,
    *,
    keys: Optional[Sequence[str]] = None,
    timeout: Optional[float] = None,
) -> List[Tuple[EngineStatus, Optional[InferenceEngine]]]:
    """Build and health-check engines in parallel; return each status with its engine (``None`` when it
    could not be built, or its health check outlived the deadline: then its own thread closes it). Every
    returned engine is open: the caller closes what it does not keep.

    :param keys: engines to probe (default :func:`candidate_keys`).
    :param timeout: health timeout in seconds for each engine (sets ``health_timeout`` where the engine has
        one); the whole probe takes about that long, however many engines are down.
    """
    from jarvis_core.engine.factory import create_engine
    from jarvis_core.plugins.registry import get_registry

    config = _load_config(config)
    keys = list(dict.fromkeys(keys if keys is not None else candidate_keys(config)))
    registrations = get_registry().items("engine")
    configured = set(config.configured_engines())
    statuses: Dict[str, EngineStatus] = {}
    engines: Dict[str, InferenceEngine] = {}
    for key in keys:
        reg = registrations.get(key)
        base = EngineStatus(
            key=key, healthy=False, host=config.host_of(key), default=key == config.engine.default,
            configured=key in configured, description=reg.description if reg else "",
            distribution=reg.distribution if reg else "",
        )
        try:
            engine = create_engine(key, **config.engine_options(key))
        except JarvisError as exc:
            statuses[key] = attrs.evolve(base, error=str(exc))
            continue
        except Exception as exc:  # a broken plugin: report it, keep probing the others
            statuses[key] = attrs.evolve(base, error=f"{type(exc).__name__}: {exc}")
            continue
        if timeout is not None and hasattr(engine, "health_timeout"):
            engine.health_timeout = timeout
        engines[key] = engine
        statuses[key] = attrs.evolve(base, host=getattr(engine, "base_url", None) or base.host)

    longest = max((float(getattr(e, "health_timeout", DEFAULT_HEALTH_TIMEOUT)) for e in engines.values()), default=0.0)
    # httpx applies the health timeout to connecting and to reading separately; allow for both, then stop
    # waiting: a health check still running by then counts as "no answer".
    grace = 2 * longest + 1.0
    deadline = time.monotonic() + grace
    calls = {key: _Call(engine.health, engine.close) for key, engine in engines.items()}
    late = _run_parallel(calls, deadline)

    out: List[Tuple[EngineStatus, Optional[InferenceEngine]]] = []
    for key in keys:
        status = statuses[key]
        built = engines.get(key)
        if built is None:
            out.append((status, None))
            continue
        call = calls[key]
        if key in late:
            status = attrs.evolve(status, error=f"no answer within {grace:g}s")
            out.append((status, None))  # its thread closes it when the health call finally returns
            continue
        if call.error is not None:
            status = attrs.evolve(status, error=f"health check failed: {type(call.error).__name__}: {call.error}")
        elif call.result:
            status = attrs.evolve(status, healthy=True)
        else:
            status = attrs.evolve(status, error="not answering" + (f" at {status.host}" if status.host else ""))
        out.append((status, built))
    return out


def discover_engines(
    config: Optional[JarvisConfig] = None,
    *,
    keys: Optional[Sequence[str]] = None,
    timeout: Optional[float] = None,
) -> List[Tuple[str, InferenceEngine]]:
    """The healthy engines as ``(key, engine)`` pairs: the default engine first, then the other configured
    ones in file order, then the rest alphabetically. Unhealthy engines are closed; the caller closes the
    returned ones it does not use. Engines that could not be built are logged, not raised."""
    found: List[Tuple[str, InferenceEngine]] = []
    for status, engine in probe_engines(config, keys=keys, timeout=timeout):
        if status.healthy and engine is not None:
            found.append((status.key, engine))
            continue
        if engine is None and status.error and not status.error.startswith("no answer within"):
            said = status.error if status.error.startswith(f"engine {status.key!r}") else (
                f"engine {status.key!r} could not be built: {status.error}")
            warnings.warn(said, RuntimeWarning, stacklevel=2)
        else:
            log.debug("engine %r: %s", status.key, status.error)
        if engine is not None:
            engine.close()
    return found


def discover_models(
    engines: Iterable[Tuple[str, InferenceEngine]], *, timeout: Optional[float] = DEFAULT_MODELS_TIMEOUT
) -> ModelListing:
    """List every engine's models in parallel: ``{key: [model ids]}``, with failures in ``result.errors``.

    :param timeout: seconds to wait for all engines together (``None``: wait for each engine's own timeout).
    """
    pairs = list(engines)
    calls = {key: _Call(engine.list_models, lambda: None) for key, engine in pairs}
    deadline = time.monotonic() + (timeout if timeout is not None else 10**9)
    late = _run_parallel(calls, deadline)
    listing = ModelListing()
    for key, _ in pairs:
        call = calls[key]
        if key in late:
            listing.errors[key] = EngineConnectionError(
                f"{key}: listing models took longer than {timeout:g}s", engine_id=key
            )
        elif call.error is not None:
            listing.errors[key] = call.error
            log.info("engine %r could not list its models: %s", key, call.error)
        else:
            listing[key] = [str(m) for m in (call.result or [])]
    return listing
