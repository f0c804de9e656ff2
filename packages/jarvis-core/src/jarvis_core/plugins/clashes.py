"""Two plugins registering the same key: the message that names both, and the user's choice of a winner.

Imported only when a clash happens, so a clean install pays nothing for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from jarvis_core.plugins.manager import JarvisPluginManager
    from jarvis_core.plugins.registry import Registration

__all__ = ["clash_message", "newcomer", "pick_preferred"]


def pick_preferred(regs: Sequence[Registration], preferred: Sequence[str]) -> Optional[Registration]:
    """The one registration whose plugin or distribution the user prefers (``None``: none, or several)."""
    chosen = [r for r in regs if r.plugin in preferred or r.distribution in preferred]
    return chosen[0] if len(chosen) == 1 else None


def newcomer(regs: Sequence[Registration], pm: JarvisPluginManager) -> Registration:
    """The registration most likely to be the unexpected one: from the most recently installed distribution
    (ties, and plugins with no install record, go to the one that registered last)."""
    ranked = sorted(enumerate(regs), key=lambda item: (pm.installed_at(item[1].plugin), item[0]))
    return ranked[-1][1]


def clash_message(name: str, regs: Sequence[Registration], pm: JarvisPluginManager) -> str:
    """``engine 'twin' is registered by both …; it is unusable until …`` naming every distribution, and a fix
    that removes the newcomer."""
    kind, _, key = name.partition(":")
    what = f"{kind.replace('_', ' ')} {key!r}"
    owners = " and ".join(f"{r.distribution} {r.version}".strip() + f" (plugin {r.plugin!r})" for r in regs)
    new = newcomer(regs, pm)
    keep = next(r for r in regs if r is not new)
    return (
        f"{what} is registered by both {owners}; it is unusable until one is removed: pip uninstall "
        f"{new.distribution}, or JARVIS_DISABLE_PLUGINS={new.plugin}, or choose one in the config with "
        f'[plugins] prefer = ["{keep.plugin}"]'
    )
