"""Defaults computed by code: a rule whose values are a function of the model's id, backend and file.

Most backend defaults are declared (pattern → values). Some can only be worked out from the model itself,
as LocalAI's backend hooks do: what a GGUF file says it is, its trained context length. A plugin registers
such a rule with ``compute``::

    @hookimpl
    def jarvis_backend_defaults(register):
        register("*", backends=("llamacpp", "embedded", ""), compute="my_plugin.hooks:from_file")

    def from_file(info: ModelInfo) -> Optional[Computed]:
        if not info.path:
            return None
        return Computed(aliases=("acme-2-7b",), extras={"context_length": 8192})

The contract:

- ``pattern`` selects the models the function is asked about, as for any rule; ``"*"`` asks about every
  model (with ``backends`` narrowing it).
- The function gets a :class:`ModelInfo` (``model``, ``backend``, ``path``: the local model file when one
  is known) and returns a :class:`Computed` or ``None`` (nothing to add). It runs when a model's defaults are
  resolved (once per model, backend and file: :class:`~jarvis_core.defaults.ModelAdapter` caches them).
- ``Computed.aliases`` are other ids the model is known by (the name in its file): every rule's pattern is
  also matched against them, so the declared family defaults apply to a file whatever its name.
- ``Computed`` fields (parsers, sampling, extras) rank after the user's config rules and before every
  declared plugin rule (what the file says beats what its name suggests); provenance names the function.
- A function that raises is reported (a warning naming the rule's distribution) and skipped: one broken
  hook never breaks every model's defaults.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Optional, Tuple

import attrs

__all__ = ["Computed", "ModelInfo", "run_compute"]


def _strings(value: Any) -> Tuple[str, ...]:
    return tuple(str(v) for v in (value or ()) if str(v).strip())


def _mapping(value: Any) -> Mapping[str, Any]:
    return dict(value or {})


@attrs.frozen
class ModelInfo:
    """What a computing rule is told about the model: its id, the backend (``None``: unknown) and the path
    of its local file when one is known (a GGUF the embedded engine serves, ``jarvis defaults --gguf``)."""

    model: str
    backend: Optional[str] = None
    path: Optional[str] = None


@attrs.frozen
class Computed:
    """What a computing rule found: other ids of the model, and fields as a declared rule has them."""

    aliases: Tuple[str, ...] = attrs.field(default=(), converter=_strings)
    tool_parser: Optional[str] = None
    reasoning_parser: Optional[str] = None
    sampling: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


def run_compute(target: str, info: ModelInfo, *, where: str) -> Optional[Computed]:
    """Call the rule's function; a failure or a wrong return type is a warning and ``None``."""
    from jarvis_core.plugins.registry import load_target

    try:
        result = load_target(target)(info)
    except Exception as exc:  # a plugin's bug: reported, never fatal for resolution
        warnings.warn(f"{where}: computing defaults for {info.model!r} failed: {type(exc).__name__}: {exc}",
                      RuntimeWarning, stacklevel=3)
        return None
    if result is None or isinstance(result, Computed):
        return result
    warnings.warn(f"{where}: returned {type(result).__name__}, not a Computed or None; ignored",
                  RuntimeWarning, stacklevel=3)
    return None
