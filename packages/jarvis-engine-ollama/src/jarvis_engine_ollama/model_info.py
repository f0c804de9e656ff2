"""What Ollama says about its models: ``/api/show`` details and ``/api/ps`` loaded models, as value types.

``details.family`` is the *architecture* (deepseek-r1 reports ``qwen2``), so it is kept as
``architecture`` and never used to pick a model family's defaults.
"""

from __future__ import annotations

import shlex
from typing import Any, Dict, Mapping, Optional, Tuple

import attrs

__all__ = ["ModelDetails", "RunningModel", "parse_parameters"]


def _tuple(value: Any) -> Tuple[str, ...]:
    return tuple(str(v) for v in value) if value else ()


def parse_parameters(text: Optional[str]) -> Dict[str, Any]:
    """Ollama's ``parameters`` text table (``name  value`` per line) as a dict.

    Numbers become ints or floats; a name that repeats (``stop``) collects its values in a list.
    """
    out: Dict[str, Any] = {}
    for line in (text or "").splitlines():
        name, _, raw = line.strip().partition(" ")
        raw = raw.strip()
        if not name or not raw:
            continue
        try:
            value: Any = shlex.split(raw)[0] if raw.startswith(("'", '"')) else raw
        except ValueError:
            value = raw
        if isinstance(value, str):
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    continue
        if name == "stop":
            out.setdefault("stop", []).append(value)
        else:
            out[name] = value
    return out


@attrs.frozen
class ModelDetails:
    """A model as ``/api/show`` describes it.

    ``capabilities`` is what the server reports (``completion``, ``tools``, ``thinking``, ``vision``,
    ``embedding``, ``insert``, …; empty on servers too old to say). ``parameters`` holds the model's own
    defaults baked into its Modelfile, which Ollama applies when a request leaves them out.
    ``context_length`` is the model's trained context (from ``model_info``), not the window a request gets.
    """

    name: str
    capabilities: Tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    architecture: str = ""
    parameter_size: str = ""
    quantization: str = ""
    context_length: Optional[int] = None
    parameters: Mapping[str, Any] = attrs.field(factory=dict)
    template: str = ""
    modified_at: str = ""

    @property
    def supports_tools(self) -> bool:
        """True when the server says the model takes ``tools``."""
        return "tools" in self.capabilities

    @property
    def supports_thinking(self) -> bool:
        """True when the server says the model takes ``think``."""
        return "thinking" in self.capabilities

    @classmethod
    def from_show(cls, name: str, body: Mapping[str, Any]) -> ModelDetails:
        """Build from an ``/api/show`` response body."""
        details = body.get("details") or {}
        info = body.get("model_info") or {}
        arch = info.get("general.architecture") or details.get("family") or ""
        ctx = info.get(f"{arch}.context_length") if arch else None
        return cls(
            name=name,
            capabilities=body.get("capabilities") or (),
            architecture=str(arch),
            parameter_size=str(details.get("parameter_size") or ""),
            quantization=str(details.get("quantization_level") or ""),
            context_length=ctx if isinstance(ctx, int) else None,
            parameters=parse_parameters(body.get("parameters")),
            template=str(body.get("template") or ""),
            modified_at=str(body.get("modified_at") or ""),
        )


@attrs.frozen
class RunningModel:
    """A model loaded in the server's memory (``/api/ps``). ``size_vram < size`` means part runs on CPU;
    ``context_length`` (newer servers) is the window it was loaded with."""

    name: str
    size: int = 0
    size_vram: int = 0
    context_length: Optional[int] = None
    expires_at: str = ""

    @classmethod
    def from_ps(cls, entry: Mapping[str, Any]) -> RunningModel:
        """Build from one entry of ``/api/ps`` ``models``."""
        ctx = entry.get("context_length")
        return cls(
            name=str(entry.get("name") or entry.get("model") or ""),
            size=int(entry.get("size") or 0),
            size_vram=int(entry.get("size_vram") or 0),
            context_length=ctx if isinstance(ctx, int) else None,
            expires_at=str(entry.get("expires_at") or ""),
        )
