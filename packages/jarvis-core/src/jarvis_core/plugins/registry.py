"""The registry: what every plugin registered, with provenance, loaded lazily.

:class:`Registry` is built once per process from a plugin manager (:func:`get_registry`). Each
registration hook is called once per plugin with a ``register`` callback bound to that plugin, so every
:class:`Registration` knows the distribution that supplied it. Targets stay strings until
:meth:`Registration.load` imports them.

This module avoids attrs and httpx on purpose: ``jarvis plugins`` must stay close to the cost of a bare
entry-point scan.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Protocol, Sequence, Tuple

from jarvis_core.errors import DuplicateRegistrationError, PluginError, UnknownNameError

if TYPE_CHECKING:
    from jarvis_core.plugins.manager import JarvisPluginManager

__all__ = [
    "KINDS",
    "DefaultsRegister",
    "ParserRegister",
    "Register",
    "Registration",
    "Registry",
    "get_registry",
    "reset_registry",
]

#: Registry kinds and the hook that fills each.
KINDS: Dict[str, str] = {
    "engine": "jarvis_register_engines",
    "agent": "jarvis_register_agents",
    "tool": "jarvis_register_tools",
    "prompt_provider": "jarvis_register_prompt_providers",
    "parser": "jarvis_register_parsers",
    "config_section": "jarvis_register_config_sections",
    "command": "jarvis_register_commands",
}


class Register(Protocol):
    """The callback passed to ``jarvis_register_engines`` and the other name-keyed hooks.

    Keyword arguments beyond ``description`` are kept as the registration's ``extra`` and shown by
    ``jarvis plugins`` (e.g. ``discoverable=False`` for an engine that discovery must not probe,
    ``aliases=(...)`` for other keys of the same item).
    """

    def __call__(self, key: str, target: Any, *, description: str = "", **extra: Any) -> None: ...


class ParserRegister(Protocol):
    """The callback passed to ``jarvis_register_parsers``."""

    def __call__(
        self, name: str, target: Any, *, kind: str, aliases: Sequence[str] = (), description: str = ""
    ) -> None: ...


class DefaultsRegister(Protocol):
    """The callback passed to ``jarvis_backend_defaults``."""

    def __call__(
        self,
        pattern: str,
        *,
        backends: Sequence[str] = ("*",),
        tool_parser: Optional[str] = None,
        reasoning_parser: Optional[str] = None,
        sampling: Optional[Dict[str, Any]] = None,
        extras: Optional[Dict[str, Any]] = None,
    ) -> None: ...


def load_target(target: Any) -> Any:
    """Resolve a ``"module:attr"`` string (dotted attributes allowed); return any other object as is."""
    if not isinstance(target, str):
        return target
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise PluginError(f"invalid target {target!r}: expected 'package.module:attribute'")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registration:
    """One registered item: its kind, key, lazy target and where it came from."""

    __slots__ = ("_loaded", "description", "distribution", "extra", "key", "kind", "plugin", "target", "version")

    def __init__(
        self,
        kind: str,
        key: str,
        target: Any,
        *,
        plugin: str,
        distribution: str,
        version: str,
        description: str = "",
        extra: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.kind = kind
        self.key = key
        self.target = target
        self.plugin = plugin
        self.distribution = distribution
        self.version = version
        self.description = description
        self.extra = extra or {}
        self._loaded: Any = None

    def load(self) -> Any:
        """Import and return the target (cached)."""
        if self._loaded is None:
            self._loaded = load_target(self.target)
        return self._loaded

    def target_name(self) -> str:
        """The target as text, without importing it."""
        t = self.target
        if isinstance(t, str):
            return t
        return f"{getattr(t, '__module__', '?')}:{getattr(t, '__qualname__', repr(t))}"

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"key": self.key, "target": self.target_name()}
        if self.description:
            out["description"] = self.description
        for k, v in self.extra.items():
            out[k] = list(v) if isinstance(v, tuple) else v
        return out

    def __repr__(self) -> str:
        return f"Registration({self.kind}:{self.key} from {self.distribution} {self.version})"


class Registry:
    """Everything registered by the loaded plugins, by kind and key, plus the backend-default rules."""

    def __init__(self, pm: JarvisPluginManager) -> None:
        self.pm = pm
        self._items: Dict[str, Dict[str, Registration]] = {kind: {} for kind in KINDS}
        #: Backend-default rules in registration order: (pattern, fields, plugin, distribution, version).
        self.default_rules: List[Tuple[str, Dict[str, Any], str, str, str]] = []
        self._fill()

    # -- building ---------------------------------------------------------------------------------
    def _fill(self) -> None:
        for plugin_name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            try:
                self._fill_from(plugin_name, plugin)
            except DuplicateRegistrationError:
                raise  # a clash between two plugins is the user's to resolve, loudly
            except Exception as exc:
                # A plugin whose hook fails is skipped like one that fails to import: nothing half-registered.
                self._forget(plugin_name)
                self.pm.plugin_failed(plugin_name, exc)

    def _fill_from(self, plugin_name: str, plugin: Any) -> None:
        dist, version = self.pm.distribution_of(plugin_name)
        for kind, hook in KINDS.items():
            caller = self._caller_for(hook, plugin)
            if caller is not None:
                caller(register=self._named_register(kind, plugin_name, dist, version))
        caller = self._caller_for("jarvis_backend_defaults", plugin)
        if caller is not None:
            caller(register=self._defaults_register(plugin_name, dist, version))

    def _forget(self, plugin_name: str) -> None:
        for table in self._items.values():
            for name in [n for n, reg in table.items() if reg.plugin == plugin_name]:
                del table[name]
        self.default_rules = [rule for rule in self.default_rules if rule[2] != plugin_name]

    def _caller_for(self, hook: str, plugin: Any) -> Optional[Callable[..., Any]]:
        # One caller per plugin so each ``register`` knows its provenance, while pluggy still does the
        # calling (argument selection, validation) instead of us invoking hookimpls by hand.
        hc = getattr(self.pm.hook, hook)
        if not any(impl.plugin is plugin for impl in hc.get_hookimpls()):
            return None
        others = [p for p in self.pm.get_plugins() if p is not plugin]
        return self.pm.subset_hook_caller(hook, remove_plugins=others)

    def _add(self, reg: Registration, names: Sequence[str]) -> None:
        table = self._items[reg.kind]
        for name in names:
            other = table.get(name)
            if other is not None:
                raise DuplicateRegistrationError(
                    f"{reg.kind} {name!r} is registered twice: by {other.distribution} {other.version} "
                    f"(plugin {other.plugin!r}) and by {reg.distribution} {reg.version} (plugin {reg.plugin!r}); "
                    f"uninstall one, or disable it with JARVIS_DISABLE_PLUGINS={reg.plugin}"
                )
        for name in names:
            table[name] = reg

    def _named_register(self, kind: str, plugin: str, dist: str, version: str) -> Callable[..., None]:
        def register(key: str, target: Any, *, description: str = "", **extra: Any) -> None:
            if not isinstance(key, str) or not key:
                raise PluginError(f"plugin {plugin!r} ({dist}) registered a {kind} with an empty or non-string key")
            aliases = tuple(extra.pop("aliases", ()) or ())
            if kind == "parser":
                pkind = extra.get("kind")
                if pkind not in ("tool", "reasoning"):
                    raise PluginError(
                        f"plugin {plugin!r} ({dist}) registered parser {key!r} with kind={pkind!r}; "
                        "use kind='tool' or kind='reasoning'"
                    )
                if aliases:
                    extra["aliases"] = aliases
            reg = Registration(
                kind, key, target, plugin=plugin, distribution=dist, version=version,
                description=description, extra=extra,
            )
            # Parser names are namespaced by their kind: "mistral" is both a tool and a reasoning parser.
            prefix = f"{extra['kind']}:" if kind == "parser" else ""
            self._add(reg, [prefix + n for n in (key, *aliases)])

        return register

    def _defaults_register(self, plugin: str, dist: str, version: str) -> Callable[..., None]:
        def register(pattern: str, **fields: Any) -> None:
            if not isinstance(pattern, str):
                raise PluginError(f"plugin {plugin!r} ({dist}) registered a backend-default rule with a non-string pattern")
            self.default_rules.append((pattern, fields, plugin, dist, version))

        return register

    # -- lookup -----------------------------------------------------------------------------------
    def items(self, kind: str) -> Dict[str, Registration]:
        """All registrations of a kind, by key (parsers are keyed ``"tool:name"`` / ``"reasoning:name"``)."""
        return self._items[kind]

    def get(self, kind: str, key: str) -> Registration:
        """The registration of ``key``; :class:`UnknownNameError` lists the available keys otherwise."""
        table = self._items[kind]
        reg = table.get(key)
        if reg is None and kind == "prompt_provider":
            lowered = {k.lower(): v for k, v in table.items()}
            reg = lowered.get(key.lower())
        if reg is None:
            if kind == "parser":
                pkind, _, name = key.partition(":")
                names = [k.partition(":")[2] for k in table if k.startswith(pkind + ":")]
                raise UnknownNameError(f"{pkind} parser", name, names)
            raise UnknownNameError(kind.replace("_", " "), key, list(table))
        return reg

    def load(self, kind: str, key: str) -> Any:
        """Shorthand for ``get(kind, key).load()``."""
        return self.get(kind, key).load()

    def __iter__(self) -> Iterator[Registration]:
        for table in self._items.values():
            seen = set()
            for reg in table.values():
                if id(reg) not in seen:
                    seen.add(id(reg))
                    yield reg


_lock = threading.Lock()
_registry: Optional[Registry] = None


def get_registry() -> Registry:
    """The process-wide registry, built on first use from :func:`~jarvis_core.plugins.make_plugin_manager`.

    Registration hooks run once per process (not once per lookup).
    """
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                from jarvis_core.plugins.manager import make_plugin_manager

                _registry = Registry(make_plugin_manager())
    return _registry


def reset_registry(registry: Optional[Registry] = None) -> None:
    """Replace (or with no argument, forget) the process-wide registry. For tests and long-lived apps."""
    global _registry
    with _lock:
        _registry = registry
