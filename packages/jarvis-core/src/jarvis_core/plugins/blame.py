"""Which plugin an exception came from: the innermost frame of its traceback that runs a plugin's code.

An agent's run calls an engine, tools, a prompt provider and parsers, most of them from other distributions.
When the run raises something that is not a jarvis error, the agent is not necessarily at fault: the part whose
code raised it is. :func:`raised_in` finds that part from the traceback and the registry alone (no package
metadata is read): a frame's module belongs to the distribution whose registered targets (or plugin module)
live in the same package, the longest such package prefix winning. jarvis-core's own modules (base classes, the
HTTP layer, the agent loop) and jarvis-server's (which runs agents) are the host, not a part to blame, so their
frames are passed over. Within the
distribution, the registration is the one whose class the frame's ``self`` is an instance of (or whose function
the frame runs); when none is, the registration whose target module the frame is in, or the distribution's only
one. This runs only when a run fails.
"""

from __future__ import annotations

import sys
import traceback
from types import FrameType
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

from jarvis_core.errors import PluginError

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Registration, Registry

__all__ = ["Source", "blamed_part", "part_failure", "raised_in", "run_failure"]

#: The packages that run agents and call plugins (the framework, the server, which catches a run's exception in
#: its own frames): their frames are never the part to blame.
HOSTS = ("jarvis_core", "jarvis_server")


class Source(NamedTuple):
    """The part of a run that raised: its registration when one is identified, else only its plugin."""

    plugin: str
    distribution: str
    version: str
    registration: Optional[Registration] = None

    def describe(self) -> str:
        """``engine 'acme' (plugin 'acme', jarvis-engine-acme 0.3.0)``, or ``plugin 'acme' (jarvis-engine-acme
        0.3.0)`` when the registration is not known."""
        if self.registration is not None:
            return self.registration.describe()
        return f"plugin {self.plugin!r} ({self.distribution} {self.version})".replace(" )", ")")


def _module_of(target: Any) -> Optional[str]:
    if isinstance(target, str):
        return target.partition(":")[0] or None
    if isinstance(target, type(sys)):
        return target.__name__
    module = getattr(target, "__module__", None)
    return module if isinstance(module, str) else getattr(type(target), "__module__", None)


def _prefixes(module: str) -> Iterable[str]:
    parts = module.split(".")
    return (".".join(parts[:n]) for n in range(len(parts), 0, -1))


def _in_host(module: str) -> bool:
    return module.partition(".")[0] in HOSTS


def _loaded_target(reg: Registration) -> Any:
    """The registration's target if its module is already imported (nothing is imported here), else ``None``."""
    target = reg.target
    if not isinstance(target, str):
        return target
    module_name, _, attr = target.partition(":")
    obj: Any = sys.modules.get(module_name)
    for part in attr.split(".") if obj is not None and attr else ():
        obj = getattr(obj, part, None)
    return obj


def _target_key(reg: Registration) -> Any:
    """Equal for registrations of the same target (an alias and the key it aliases)."""
    return (reg.kind, reg.target if isinstance(reg.target, str) else id(reg.target))


class _Owners:
    """Module package -> the distribution(s) whose registrations and plugin modules live there."""

    def __init__(self, registry: Registry) -> None:
        self.regs: Dict[str, List[Registration]] = {}
        self.versions: Dict[str, Tuple[str, str]] = {}  # distribution -> (a plugin of it, its version)
        self.packages: Dict[str, Set[str]] = {}
        for reg in registry:
            self.regs.setdefault(reg.distribution, []).append(reg)
            self._own(_module_of(reg.target), reg.distribution, reg.plugin, reg.version)
        pm = registry.pm
        for name, plugin in pm.list_name_plugin():
            if plugin is not None:
                dist, version = pm.distribution_of(name)
                self._own(_module_of(plugin), dist, name, version)

    def _own(self, module: Optional[str], dist: str, plugin: str, version: str) -> None:
        if not module or _in_host(module):
            return
        self.versions.setdefault(dist, (plugin, version))
        for prefix in _prefixes(module):
            self.packages.setdefault(prefix, set()).add(dist)

    def distribution_of(self, module: str) -> Optional[str]:
        if _in_host(module):
            return None
        for prefix in _prefixes(module):
            dists = self.packages.get(prefix)
            if dists:
                return next(iter(dists)) if len(dists) == 1 else None
        return None


def _frames(exc: BaseException) -> List[FrameType]:
    """The frames of ``exc``'s traceback, innermost first."""
    return [frame for frame, _line in traceback.walk_tb(exc.__traceback__)][::-1]


def _matches(reg: Registration, frame: FrameType) -> Optional[int]:
    """How closely ``frame`` runs ``reg``'s target: 0 for its exact class (or function), the distance up
    ``self``'s class hierarchy for a base class, ``None`` when it does not."""
    target = _loaded_target(reg)
    if target is None:
        return None
    if getattr(target, "__code__", None) is frame.f_code:
        return 0
    if not isinstance(target, type):
        return None
    owner = frame.f_locals.get("self", frame.f_locals.get("cls"))
    cls = owner if isinstance(owner, type) else type(owner)
    mro = getattr(cls, "__mro__", ())
    return mro.index(target) if target in mro else None


def _registration(regs: List[Registration], frames: List[FrameType]) -> Optional[Registration]:
    # Aliases share a target with the key they alias; the alias is never the one to name.
    regs = sorted(regs, key=lambda r: "alias_of" in r.extra)
    for frame in frames:
        scored = [(score, i) for i, reg in enumerate(regs) if (score := _matches(reg, frame)) is not None]
        if scored:
            return regs[min(scored)[1]]
    module = frames[0].f_globals.get("__name__")
    here = {_target_key(r): r for r in regs if _module_of(r.target) == module}
    if len(here) == 1:
        return next(iter(here.values()))
    return regs[0] if len({_target_key(r) for r in regs}) == 1 else None


def raised_in(exc: BaseException, registry: Registry) -> Optional[Source]:
    """The plugin part whose code raised ``exc`` (the innermost frame of its traceback outside the :data:`HOSTS`
    that belongs to a registered distribution), or ``None`` when no frame does."""
    frames = _frames(exc)
    if not frames:
        return None
    owners = _Owners(registry)
    for i, frame in enumerate(frames):
        module = frame.f_globals.get("__name__")
        dist = owners.distribution_of(module) if isinstance(module, str) else None
        if dist is None:
            continue
        # The frames of that distribution from here outwards, up to where something else called it.
        own = [frame]
        for outer in frames[i + 1:]:
            name = outer.f_globals.get("__name__")
            if not isinstance(name, str) or owners.distribution_of(name) != dist:
                break
            own.append(outer)
        reg = _registration(owners.regs.get(dist, []), own)
        plugin, version = owners.versions[dist]
        if reg is not None:
            return Source(reg.plugin, reg.distribution, reg.version, reg)
        return Source(plugin, dist, version)
    return None


def _same_part(agent: Registration, source: Source) -> bool:
    reg = source.registration
    if reg is None:
        return source.distribution == agent.distribution
    return reg is agent or (reg.kind == agent.kind and _target_key(reg) == _target_key(agent))


def blamed_part(agent: Registration, exc: BaseException, registry: Registry) -> Optional[Source]:
    """The part of agent ``agent``'s run that raised ``exc`` when it is not the agent itself, else ``None``."""
    source = raised_in(exc, registry)
    return None if source is None or _same_part(agent, source) else source


def run_failure(agent: Registration, exc: BaseException, source: Optional[Source], *,
                shown: Optional[str] = None) -> PluginError:
    """The :class:`PluginError` for agent ``agent``'s run raising ``exc`` (not a jarvis error), naming the agent
    and ``source`` (:func:`blamed_part`), the part that raised it, whose plugin the error's fields then name.

    ``shown`` is what the message says of the exception (default ``": Type: text"``; the server shows the type
    only).
    """
    said = f": {type(exc).__name__}: {exc}" if shown is None else shown
    if source is None:
        return agent.error(f"failed while running{said}")
    return PluginError(
        f"{agent.describe()} failed in {source.describe()}{said}; report it to the authors of {source.distribution}, "
        f"or disable it with JARVIS_DISABLE_PLUGINS={source.plugin}",
        key=source.registration.key if source.registration is not None else "",
        plugin=source.plugin, distribution=source.distribution)


def part_failure(exc: BaseException, registry: Registry) -> Optional[PluginError]:
    """The :class:`PluginError` for ``exc`` (not a jarvis error) raised outside any agent run by a plugin's code
    (an engine's ``generate``, a prompt provider building its prompt), naming that part; ``None`` when no
    plugin's frame raised it."""
    source = raised_in(exc, registry)
    if source is None:
        return None
    if source.registration is not None:
        return source.registration.error("failed", exc)
    return PluginError(
        f"{source.describe()} failed: {type(exc).__name__}: {exc}; report it to the plugin's authors, or disable it "
        f"with JARVIS_DISABLE_PLUGINS={source.plugin}", plugin=source.plugin, distribution=source.distribution)
