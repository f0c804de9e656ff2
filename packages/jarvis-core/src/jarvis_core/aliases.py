"""Model aliases: ``[aliases]`` names a model, optionally with an engine and request options.

::

    [aliases]
    fast = "qwen3:0.6b"                                        # a model
    smart = { model = "qwen3:32b", engine = "ollama", options = { temperature = 0.2 } }

An alias is accepted wherever a model is named: ``--model``, ``Jarvis(model=...)``, ``ask(..., model=...)``,
``[engine] model``, ``[agents.<key>] model`` (:func:`jarvis_core.agents.factory.agent_model_alias`),
``jarvis serve --model``, the ``model`` field of a request to ``jarvis serve`` and a managed agent's
``config.model``. It
becomes its model; its engine is used unless one was named explicitly (``--engine``, ``engine=``); its
options are defaults that explicit arguments beat. ``jarvis aliases`` lists, sets and removes them, and
``jarvis models`` shows them. An alias never names another alias.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple

import attrs

if TYPE_CHECKING:
    from jarvis_core.config import JarvisConfig

__all__ = ["ModelAlias", "apply_alias_options", "resolve_alias"]


def _options(value: Mapping[str, Any]) -> Dict[str, Any]:
    return dict(value)


@attrs.frozen
class ModelAlias:
    """One ``[aliases]`` entry: the model, the engine (``None``: whichever is in use) and default options."""

    model: str = attrs.field(default="")
    engine: Optional[str] = None
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=_options)

    @model.validator
    def _model_named(self, _attribute: Any, value: str) -> None:
        if not value.strip():
            raise ValueError("model must name a model (it is missing or empty)")

    def to_dict(self) -> Dict[str, Any]:
        """``{"model", "engine", "options"}`` (the ``--json`` and config form; ``engine`` only when set)."""
        out: Dict[str, Any] = {"model": self.model}
        if self.engine:
            out["engine"] = self.engine
        if self.options:
            out["options"] = dict(self.options)
        return out


def resolve_alias(config: Optional[JarvisConfig], name: Optional[str]) -> Optional[ModelAlias]:
    """The alias ``name`` stands for, or ``None`` when it is a plain model id (or there is no config)."""
    if config is None or not name:
        return None
    return config.aliases.get(name)


def apply_alias_options(
    alias: Optional[ModelAlias], temperature: Optional[float], max_tokens: Optional[int], options: Mapping[str, Any],
) -> Tuple[Optional[float], Optional[int], Dict[str, Any]]:
    """``temperature``, ``max_tokens`` and ``options`` with the alias's options filled in where the caller
    gave none."""
    merged = dict(options)
    if alias is None:
        return temperature, max_tokens, merged
    defaults = dict(alias.options)
    if temperature is None:
        temperature = defaults.pop("temperature", None)
    else:
        defaults.pop("temperature", None)
    if max_tokens is None:
        max_tokens = defaults.pop("max_tokens", None)
    else:
        defaults.pop("max_tokens", None)
    for key, value in defaults.items():
        merged.setdefault(key, value)
    return temperature, max_tokens, merged
