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
    "DISCOVERY",
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


#: Kinds some of whose registrations cost a discovery (see :meth:`Registry.discover`), and the hook for it.
DISCOVERY: Dict[str, str] = {"tool": "jarvis_discover_tools"}


class Register(Protocol):
    """The callback passed to ``jarvis_register_engines`` and the other name-keyed hooks.

    Keyword arguments beyond ``description`` are kept as the registration's ``extra`` and shown by
    ``jarvis plugins`` (e.g. ``discoverable=False`` for an engine that discovery must not probe,
    ``aliases=(...)`` for other keys of the same item).
    """

    def __call__(self, key: str, target: Any, *, description: str = "", **extra: Any) -> None: ...


class ParserRegister(Protocol):
    """The callback passed to ``jarvis_register_parsers``. ``kind`` is ``"tool"`` or ``"reasoning"``; other
    keyword arguments are kept as the registration's ``extra``, like :class:`Register`'s."""

    def __call__(
        self, name: str, target: Any, *, kind: str, aliases: Sequence[str] = (), description: str = "",
        **extra: Any,
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
        compute: Optional[str] = None,
    ) -> None: ...


def load_target(target: Any) -> Any:
    """Resolve a ``"module:attr"`` string (dotted attributes allowed); return any other object as is."""
    if not isinstance(target, str):
        return target
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise PluginError(f"invalid target {target!r}: expected 'package.module:attribute'")
    # Import errors propagate as they are: Registration.load() names the plugin that registered the target.
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

    def describe(self) -> str:
        """``engine 'acme' (plugin 'acme', jarvis-engine-acme 1.0)``: what and whose, for messages."""
        return f"{self.kind.replace('_', ' ')} {self.key!r} (plugin {self.plugin!r}, {self.distribution} {self.version})".replace(
            " )", ")"
        )

    def error(self, problem: str, cause: Optional[BaseException] = None) -> PluginError:
        """A :class:`PluginError` blaming this registration's plugin for ``problem`` (for a tool, its
        subclass :class:`~jarvis_core.tools.InvalidToolError`)."""
        from jarvis_core.plugins.contracts import error_type

        text = f"{self.describe()} {problem}"
        if cause is not None:
            text += f": {type(cause).__name__}: {cause}"
        return error_type(self.kind)(
            f"{text}; report it to the plugin's authors, or disable it with JARVIS_DISABLE_PLUGINS={self.plugin}",
            key=self.key, plugin=self.plugin, distribution=self.distribution)

    def load(self) -> Any:
        """Import and return the target (cached). A target that does not import, or is not what its kind
        requires (see :mod:`jarvis_core.plugins.contracts`), is a :class:`PluginError` naming the key, the
        plugin and its distribution."""
        if self._loaded is None:
            try:
                loaded = load_target(self.target)
            except PluginError as exc:
                raise self.error(f"has a bad target: {exc}") from exc
            except (Exception, SystemExit) as exc:
                raise self.error(f"could not be imported from {self.target_name()!r}", exc) from exc
            from jarvis_core.plugins.contracts import contract_problem

            problem = contract_problem(self.kind, loaded, self.extra)
            if problem:
                raise self.error(f"is registered as {self.target_name()!r}, which {problem}")
            self._loaded = loaded
        return self._loaded

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """Load the target and call it. jarvis' own typed errors pass through; anything else the plugin's
        code raises becomes a :class:`PluginError` naming the key, the plugin and its distribution."""
        from jarvis_core.errors import JarvisError
        from jarvis_core.plugins.contracts import built_problem

        target = self.load()
        try:
            built = target(*args, **kwargs)
        except JarvisError:
            raise
        except (Exception, SystemExit) as exc:
            raise self.error("failed to build", exc) from exc
        problem = built_problem(self.kind, built)
        if problem:
            raise self.error(problem)
        return built

    def instance(self, **kwargs: Any) -> Any:
        """The object this registration stands for: a class or factory is called with ``kwargs`` (through
        :meth:`build`), an instance is used as it is (and checked like a built one)."""
        from jarvis_core.plugins.contracts import built_problem

        target = self.load()
        if isinstance(target, type) or (callable(target) and not hasattr(target, "run")):
            return self.build(**kwargs)
        problem = built_problem(self.kind, target)
        if problem:
            raise self.error(problem)
        return target

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
    """Everything registered by the loaded plugins, by kind and key, plus the backend-default rules.

    A key registered by two plugins is a *clash*: it is reported once as a warning naming both
    distributions, and looking it up raises :class:`DuplicateRegistrationError`, until one of them is
    removed or the user prefers one (``[plugins] prefer`` in the config, or ``JARVIS_PREFER_PLUGINS``).
    Every other key keeps working.
    """

    def __init__(self, pm: JarvisPluginManager) -> None:
        self.pm = pm
        self._items: Dict[str, Dict[str, Registration]] = {kind: {} for kind in KINDS}
        #: Backend-default rules in registration order: (pattern, fields, plugin, distribution, version).
        self.default_rules: List[Tuple[str, Dict[str, Any], str, str, str]] = []
        #: Unresolved clashes: registry key (``"engine:twin"``) -> the registrations claiming it.
        self.clashes: Dict[str, List[Registration]] = {}
        #: Kinds whose discovery hook ran (see :meth:`discover`).
        self._discovered: set[str] = set()
        #: Kind -> the distributions whose discovery hook ran for it (named when a key is still unknown).
        self._discoverers: Dict[str, List[str]] = {}
        self._discovering = threading.RLock()
        self._in_discovery: set[str] = set()
        self._fill()
        self._resolve_clashes()
        #: Plugin commands that take a built-in command's name: left out, and warned about once, here.
        self.builtin_clashes: List[Registration] = self._builtin_command_clashes()
        #: Rules that name a parser no plugin registers (checked once the registry is complete).
        self.problems: List[str] = []
        third_party = [rule for rule in self.default_rules if rule[3] != "jarvis-core"]
        if third_party:
            # The core's own family table names some parsers upstream servers have and no plugin implements
            # yet; those are reported when used (text passes through unparsed), not on every command.
            from jarvis_core.plugins.contracts import rule_parser_problems

            self.problems = rule_parser_problems(third_party, self._items["parser"])
            for problem in self.problems:
                self.pm.warn(problem)

    # -- building ---------------------------------------------------------------------------------
    def _fill(self) -> None:
        for plugin_name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            try:
                self._fill_from(plugin_name, plugin)
            except _HookFailed as failed:
                # Nothing half-registered: the plugin's other hooks are dropped too, and the warning says which.
                dropped = self._forget(plugin_name)
                self.pm.plugin_failed(plugin_name, failed.error, context=failed.context(dropped))

    def _fill_from(self, plugin_name: str, plugin: Any) -> None:
        dist, version = self.pm.distribution_of(plugin_name)
        hooks: List[Tuple[str, Callable[..., None]]] = [
            (hook, self._named_register(kind, plugin_name, dist, version)) for kind, hook in KINDS.items()
        ]
        hooks.append(("jarvis_backend_defaults", self._defaults_register(plugin_name, dist, version)))
        for hook, register in hooks:
            caller = self._caller_for(hook, plugin)
            if caller is None:
                continue
            try:
                results = caller(register=register)
            except (Exception, SystemExit) as exc:
                raise _HookFailed(hook, exc) from exc
            if any(r is not None for r in results or ()):
                self.pm.warn(
                    f"plugin {plugin_name!r} ({dist} {version}): {hook} returned a value instead of calling "
                    "register(...); the value is ignored (call register(key, target) for each item)"
                )

    def _forget(self, plugin_name: str) -> List[str]:
        dropped: List[str] = []
        for table in self._items.values():
            for name in [n for n, reg in table.items() if reg.plugin == plugin_name]:
                reg = table.pop(name)
                if name == reg.key or name.endswith(":" + reg.key):
                    dropped.append(f"{reg.kind.replace('_', ' ')} {reg.key!r}")
        dropped += [f"backend-default rule {r[0]!r}" for r in self.default_rules if r[2] == plugin_name]
        self.default_rules = [rule for rule in self.default_rules if rule[2] != plugin_name]
        for name in list(self.clashes):
            self.clashes[name] = [r for r in self.clashes[name] if r.plugin != plugin_name]
            if len(self.clashes[name]) < 2:
                self._items[name.partition(":")[0]].update(
                    {name.partition(":")[2]: r for r in self.clashes.pop(name)}
                )
        return dropped

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
            clash = self.clashes.get(f"{reg.kind}:{name}")
            other = table.get(name)
            if clash is not None:
                clash.append(reg)
            elif other is not None:
                self.clashes[f"{reg.kind}:{name}"] = [table.pop(name), reg]
            else:
                table[name] = reg

    def _resolve_clashes(self, names: Optional[Sequence[str]] = None) -> None:
        if not self.clashes:
            return
        from jarvis_core.plugins.clashes import clash_message, pick_preferred

        for name, regs in [(n, self.clashes[n]) for n in (self.clashes if names is None else names)
                           if n in self.clashes]:
            winner = pick_preferred(regs, self.pm.preferred_plugins())
            if winner is not None:
                kind, _, key = name.partition(":")
                self._items[kind][key] = winner
                del self.clashes[name]
                continue
            message = clash_message(name, regs, self.pm)
            if self.pm.strict:
                raise DuplicateRegistrationError(message, key=name.partition(":")[2],
                                                 distributions=[r.distribution for r in regs])
            self.pm.warn(message + "; every other key still works")

    def _builtin_command_clashes(self) -> List[Registration]:
        commands = self._items["command"]
        if not commands:
            return []
        from jarvis_core.cli.builtin_commands import COMMANDS

        taken = [commands.pop(name) for name in [n for n in commands if n in COMMANDS]]
        for reg in taken:
            self.pm.warn(
                f"command {reg.key!r} is registered by {reg.distribution} {reg.version} (plugin {reg.plugin!r}) and is "
                f"a built-in jarvis command; the plugin's command is ignored (rename it in the plugin, or disable it "
                f"with JARVIS_DISABLE_PLUGINS={reg.plugin})".replace("  (", " (")
            )
        return taken

    def _named_register(self, kind: str, plugin: str, dist: str, version: str,
                        replace: bool = False) -> Callable[..., None]:
        what = kind.replace("_", " ")
        article = "an" if what[0] in "aeiou" else "a"

        def register(key: str, target: Any, *, description: str = "", **extra: Any) -> None:
            if not isinstance(key, str) or not key:
                raise PluginError(f"registered {article} {what} with an empty or non-string key ({key!r})")
            aliases = tuple(extra.pop("aliases", ()) or ())
            if kind == "parser":
                pkind = extra.get("kind")
                if pkind not in ("tool", "reasoning"):
                    raise PluginError(f"registered parser {key!r} with kind={pkind!r}; use kind='tool' or kind='reasoning'")
                if aliases:
                    extra["aliases"] = aliases
            reg = Registration(
                kind, key, target, plugin=plugin, distribution=dist, version=version,
                description=description, extra=extra,
            )
            # Parser names are namespaced by their kind: "mistral" is both a tool and a reasoning parser.
            prefix = f"{extra['kind']}:" if kind == "parser" else ""
            names = [prefix + n for n in (key, *aliases)]
            if replace:  # a discovered registration replaces the one its plugin made up front
                table = self._items[kind]
                for name in names:
                    if name in table and table[name].plugin == plugin:
                        del table[name]
            self._add(reg, names)

        return register

    def _defaults_register(self, plugin: str, dist: str, version: str) -> Callable[..., None]:
        def register(pattern: str, **fields: Any) -> None:
            if not isinstance(pattern, str):
                raise PluginError(f"registered a backend-default rule with a non-string pattern ({pattern!r})")
            self.default_rules.append((pattern, fields, plugin, dist, version))

        return register

    def discover(self, kind: str) -> None:
        """Run the discovery hook of ``kind`` (:data:`DISCOVERY`, e.g. ``jarvis_discover_tools``) of every
        plugin, once per process: for what needs every registration of the kind (``jarvis tools``).
        :meth:`get` calls it for a key nothing registered up front; :meth:`items` never does, so listings of
        what plugins registered (``jarvis plugins``) stay as cheap as the entry-point scan."""
        hook = DISCOVERY.get(kind)
        if hook is None or kind in self._discovered:
            return
        with self._discovering:
            if kind in self._discovered or kind in self._in_discovery:  # done, or a hook's own lookup
                return
            self._in_discovery.add(kind)
            try:
                self._discover_with(kind, hook)
            finally:
                self._discovered.add(kind)
                self._in_discovery.discard(kind)

    def _discover_with(self, kind: str, hook: str) -> None:
        before = set(self.clashes)
        for plugin_name, plugin in self.pm.list_name_plugin():
            caller = self._caller_for(hook, plugin) if plugin is not None else None
            if caller is None:
                continue
            dist, version = self.pm.distribution_of(plugin_name)
            self._discoverers.setdefault(kind, []).append(dist)
            try:
                caller(register=self._named_register(kind, plugin_name, dist, version, replace=True))
            except (Exception, SystemExit) as exc:
                self.pm.plugin_failed(plugin_name, exc, context=f"in {hook}; what it registered up front stays")
        self._resolve_clashes([name for name in self.clashes if name not in before])

    # -- lookup -----------------------------------------------------------------------------------
    def items(self, kind: str) -> Dict[str, Registration]:
        """All registrations of a kind, by key (parsers are keyed ``"tool:name"`` / ``"reasoning:name"``);
        those a discovery finds only after :meth:`discover`."""
        return self._items[kind]

    def get(self, kind: str, key: str) -> Registration:
        """The registration of ``key`` (discovering the kind's costly registrations first when nothing
        registered it up front); :class:`UnknownNameError` lists the available keys otherwise."""
        table = self._items[kind]
        if key not in table and kind in DISCOVERY and kind not in self._discovered \
                and f"{kind}:{key}" not in self.clashes:
            self.discover(kind)
        reg = table.get(key)
        if reg is None and f"{kind}:{key}" in self.clashes:
            from jarvis_core.plugins.clashes import clash_message

            regs = self.clashes[f"{kind}:{key}"]
            raise DuplicateRegistrationError(clash_message(f"{kind}:{key}", regs, self.pm), key=key,
                                             distributions=[r.distribution for r in regs])
        if reg is None and kind == "prompt_provider":
            lowered = {k.lower(): v for k, v in table.items()}
            reg = lowered.get(key.lower())
        if reg is None:
            if kind == "parser":
                pkind, _, name = key.partition(":")
                names = [k.partition(":")[2] for k in table if k.startswith(pkind + ":")]
                raise UnknownNameError(f"{pkind} parser", name, names)
            raise UnknownNameError(kind.replace("_", " "), key, list(table), note=self._after_discovery(kind, key))
        return reg

    def _after_discovery(self, kind: str, key: str) -> str:
        """For a key still unknown once plugins discovered what they could: whose discovery ran, and the
        registered keys close to it (a typo is likelier than a tool nothing offers)."""
        discoverers = self._discoverers.get(kind)
        if not discoverers:
            return ""
        import difflib  # only for an unknown key

        close = difflib.get_close_matches(key, list(self._items[kind]), n=3, cutoff=0.6)
        near = f"did you mean {' or '.join(map(repr, close))}?" if close else "no close match"
        return f"not found by discovery either ({DISCOVERY[kind]} of {', '.join(sorted(set(discoverers)))} ran); {near}"

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


class _HookFailed(Exception):
    """A plugin's hook raised: which hook, and what."""

    def __init__(self, hook: str, error: BaseException) -> None:
        super().__init__(hook)
        self.hook, self.error = hook, error

    def context(self, dropped: Sequence[str]) -> str:
        lost = f"; its other registrations were dropped too: {', '.join(dropped)}" if dropped else ""
        return f"in {self.hook}{lost}"


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
