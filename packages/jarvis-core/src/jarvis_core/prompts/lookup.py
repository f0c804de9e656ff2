"""Finding prompt providers: by case-insensitive name through the registry, or by model id (``auto``).

A provider class is instantiated once per registry and the instance reused (the reference implementation
re-imported and re-instantiated every provider on every lookup).

``auto`` reads the ``prompt_provider`` extra of the model's backend defaults: a rule such as
``register("qwen2.5-7b", extras={"prompt_provider": "Qwen25MediumUntrained"})`` names the provider for
that family, longest pattern first across every plugin and the user's ``[model_defaults]``, with the
provenance of the rule that supplied it.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Tuple

import attrs

from jarvis_core.errors import JarvisError
from jarvis_core.prompts.provider import PromptProvider

__all__ = ["AUTO", "AutoChoice", "choose_provider", "get_provider", "provider_for_model", "provider_registrations"]

#: The provider name that means "pick by model id".
AUTO = "auto"

#: The extras key a backend-default rule names its family's provider with.
EXTRAS_KEY = "prompt_provider"

_lock = threading.Lock()
_instances: Dict[Tuple[int, str], PromptProvider] = {}


def _registry(registry: Any) -> Any:
    if registry is None:
        from jarvis_core.plugins.registry import get_registry

        return get_registry()
    return registry


def provider_registrations(registry: Any = None) -> List[Any]:
    """Every prompt-provider :class:`~jarvis_core.plugins.registry.Registration`, sorted by key."""
    table = _registry(registry).items("prompt_provider")
    return [table[k] for k in sorted(table, key=str.lower)]


def get_provider(name: str, registry: Any = None) -> PromptProvider:
    """The provider registered as ``name`` (any letter case), instantiated once.

    Raises :class:`~jarvis_core.errors.UnknownNameError` listing the installed providers for an unknown
    name, and :class:`~jarvis_core.errors.PluginError` when the target is not a ``PromptProvider``.
    """
    reg = _registry(registry).get("prompt_provider", name)
    key = (id(_registry(registry)), reg.key)
    with _lock:
        hit = _instances.get(key)
    if hit is not None:
        return hit
    # Built and checked like every other kind: a failure names the key, the plugin and its distribution.
    provider = reg.instance()
    with _lock:
        _instances.setdefault(key, provider)
        return _instances[key]


@attrs.frozen
class AutoChoice:
    """The provider ``auto`` picked for a model, and the rule that named it."""

    name: str
    model: str
    pattern: str
    distribution: str

    def describe(self) -> str:
        return (f"prompt provider {self.name} for model {self.model!r} "
                f"(rule {self.pattern!r} from {self.distribution})")


def provider_for_model(model: str, backend: Optional[str] = None, *, user_rules: Any = None,
                       registry: Any = None) -> Optional[AutoChoice]:
    """The provider the backend defaults name for ``model``, or None when no matching rule names one."""
    from jarvis_core.defaults.resolver import resolve

    resolved = resolve(model, backend, user_rules=user_rules, registry=_registry(registry))
    name = resolved.extras.get(EXTRAS_KEY)
    if not isinstance(name, str) or not name.strip():
        return None
    where = resolved.provenance[f"extras.{EXTRAS_KEY}"]
    return AutoChoice(name.strip(), model, where.pattern, where.distribution)


def choose_provider(name: str, *, model: Optional[str] = None, backend: Optional[str] = None,
                    user_rules: Any = None, registry: Any = None) -> Tuple[PromptProvider, Optional[AutoChoice]]:
    """The provider for ``name``; for ``"auto"`` the one the model's backend defaults name (and the choice,
    for announcing). ``auto`` with no rule naming a provider is a :class:`JarvisError` listing the installed
    ones, never a silent default."""
    if name.strip().lower() != AUTO:
        return get_provider(name.strip(), registry), None
    if not model:
        raise JarvisError("prompt provider 'auto' needs a model id to pick by")
    choice = provider_for_model(model, backend, user_rules=user_rules, registry=registry)
    if choice is None:
        names = ", ".join(r.key for r in provider_registrations(registry)) or "none installed"
        raise JarvisError(f"no backend-default rule names a prompt provider for model {model!r}; pass "
                          f"--prompt-provider NAME (installed: {names})")
    return get_provider(choice.name, registry), choice
