"""``[retry]``: how requests are retried and which engines a failed request falls back to.

::

    [retry]                      # every engine
    attempts = 3                 # tries in all, the first included (1: never retry)
    max_time = 120.0             # no retry would end later than this many seconds after the first try
    [retry.ollama]               # one engine: these keys over the ones above
    attempts = 5
    fallbacks = [{ engine = "vllm", model = "qwen3-8b" }, "llamacpp"]
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

import attrs

from jarvis_core.engine.limits import check_count, check_finite, check_seconds, validator

__all__ = ["FallbackTarget", "RetryConfig", "RetrySettings"]


@attrs.frozen
class FallbackTarget:
    """An engine (registry key) to try when a request failed, and the model to ask it for (``None``: the
    request's model)."""

    engine: str
    model: Optional[str] = None

    def describe(self) -> str:
        return f"{self.engine} (model {self.model})" if self.model else self.engine


def _targets(value: Any) -> List[FallbackTarget]:
    out = []
    for item in value or ():
        if isinstance(item, FallbackTarget):
            out.append(item)
        elif isinstance(item, str):
            out.append(FallbackTarget(item))
        elif isinstance(item, Mapping):
            out.append(FallbackTarget(**item))
        else:
            raise TypeError(f"a fallback is an engine key or {{ engine = ..., model = ... }}, got {item!r}")
    return out


@attrs.frozen
class RetrySettings:
    """One engine's retry and fallback settings."""

    attempts: int = attrs.field(default=3, validator=validator(check_count, minimum=1))
    base_delay: float = attrs.field(default=0.5, validator=validator(check_finite, minimum=0))
    max_delay: float = attrs.field(default=20.0, validator=validator(check_finite, minimum=0))
    #: A ``Retry-After`` longer than this (a daily quota, say) is not waited for: the error stands.
    max_retry_after: float = attrs.field(default=60.0, validator=validator(check_finite, minimum=0))
    max_time: float = attrs.field(default=120.0, validator=validator(check_seconds))
    fallbacks: List[FallbackTarget] = attrs.field(factory=list, converter=_targets)


@attrs.frozen
class RetryConfig:
    """``[retry]`` as loaded: the settings of every engine, and each ``[retry.<engine>]`` over them."""

    default: RetrySettings = attrs.field(factory=RetrySettings)
    engines: Mapping[str, RetrySettings] = attrs.field(factory=dict)

    def for_engine(self, key: str) -> RetrySettings:
        """The settings that apply to engine ``key``."""
        return self.engines.get(key, self.default)

    def to_dict(self) -> Dict[str, Any]:
        def plain(settings: RetrySettings) -> Dict[str, Any]:
            return attrs.asdict(settings, filter=lambda _attribute, value: value is not None)

        out = plain(self.default)
        for key, settings in self.engines.items():
            out[key] = plain(settings)
        return out
