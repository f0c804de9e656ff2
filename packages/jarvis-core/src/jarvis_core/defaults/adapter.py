"""The engine-side helper: fill sampling defaults, split inline reasoning, turn text tool calls into calls.

Engines call it like this, on every request (:meth:`ModelAdapter.for_model` is the one cache)::

    adapter = ModelAdapter.for_model(model, "llamacpp", user_rules=config.model_defaults)
    params = adapter.sampling({"temperature": temperature, "top_p": top_p})   # explicit None = unset
    if adapter.needs_postprocessing(tools):                                    # else the answer passes as is
        completion = adapter.postprocess(completion, tools)                    # whole responses
        proc = adapter.stream_processor(tools)                                 # streams
        for chunk in wire_chunks: yield from proc.feed(chunk)
        yield from proc.finish()

Precedence of sampling values: explicit request values (not None; an explicit 0 is a value) > the user's
config > plugin/family defaults > engine defaults (temperature 0.7).
"""

from __future__ import annotations

import copy
import json
import threading
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Dict, Hashable, Mapping, Optional, Tuple

from jarvis_core.defaults.resolver import Resolved, resolve
from jarvis_core.parsers.compose import ParserPlan
from jarvis_core.types import Completion

if TYPE_CHECKING:
    from jarvis_core.defaults.stream import StreamProcessor

__all__ = ["ENGINE_DEFAULTS", "ModelAdapter"]

#: The engine tier: what is sent when no request value, user rule or family rule sets a field.
ENGINE_DEFAULTS: Mapping[str, Any] = {"temperature": 0.7}

_CACHE_SIZE = 256
_lock = threading.Lock()
_adapters: OrderedDict[Tuple[Any, ...], ModelAdapter] = OrderedDict()


#: id(rules) -> (rules, a copy of them, their key): engines pass the same rules object on every request.
_rule_keys: Dict[int, Tuple[Any, Any, str]] = {}


def _rules_key(user_rules: Any) -> str:
    if not user_rules:
        return ""
    known = _rule_keys.get(id(user_rules))
    # Comparing with the copy costs far less than serialising again, and notices rules changed in place.
    if known is not None and known[0] is user_rules and known[1] == user_rules:
        return known[2]
    try:
        key = json.dumps(user_rules, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        key = repr(user_rules)
    if len(_rule_keys) >= 16:
        _rule_keys.clear()
    _rule_keys[id(user_rules)] = (user_rules, copy.deepcopy(user_rules), key)
    return key


class ModelAdapter:
    """Per-(model, backend) defaults and response post-processing. Cheap to build; cached by :meth:`for_model`."""

    def __init__(
        self, resolved: Resolved, *, engine_defaults: Optional[Mapping[str, Any]] = None, registry: Any = None
    ) -> None:
        self.resolved = resolved
        self._registry = registry
        self.engine_defaults: Mapping[str, Any] = dict(ENGINE_DEFAULTS if engine_defaults is None else engine_defaults)
        self._classes: Optional[Tuple[Any, Any]] = None
        self._plans: Dict[bool, ParserPlan] = {}
        self._derived: Dict[Hashable, Any] = {}

    @classmethod
    def for_model(
        cls, model: str, backend: Optional[str] = None, *, user_rules: Any = None, registry: Any = None,
        path: Optional[str] = None,
    ) -> ModelAdapter:
        """The adapter of ``model`` on ``backend`` (cached per model, backend, user rules, registry and
        ``path``, the model's local file when known: see :func:`~jarvis_core.defaults.resolve`)."""
        if registry is None:
            from jarvis_core.plugins import get_registry

            registry = get_registry()
        key = (model, backend, _rules_key(user_rules), id(registry), path)
        with _lock:
            hit = _adapters.get(key)
            if hit is not None:
                _adapters.move_to_end(key)
                return hit
        adapter = cls(resolve(model, backend, user_rules=user_rules, registry=registry, path=path), registry=registry)
        with _lock:
            _adapters[key] = adapter
            while len(_adapters) > _CACHE_SIZE:
                _adapters.popitem(last=False)
        return adapter

    # -- facts ------------------------------------------------------------------------------------
    @property
    def model(self) -> str:
        return self.resolved.model

    @property
    def backend(self) -> Optional[str]:
        return self.resolved.backend

    @property
    def tool_parser(self) -> Optional[str]:
        """Name of the family's tool-call parser, or None."""
        return self.resolved.tool_parser

    @property
    def reasoning_parser(self) -> Optional[str]:
        """Name of the family's reasoning parser, or None."""
        return self.resolved.reasoning_parser

    @property
    def extras(self) -> Mapping[str, Any]:
        return self.resolved.extras

    # -- sampling ---------------------------------------------------------------------------------
    def sampling(self, explicit: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """Sampling values to send: ``explicit`` non-None values, then user config, family, engine defaults.

        Keys of ``explicit`` that are not sampling fields (e.g. ``max_tokens``) pass through when not None.
        ``top_k`` of ``-1`` or ``0`` means "disabled" in the family tables; engines map it for their wire.
        """
        out: Dict[str, Any] = dict(self.engine_defaults)
        out.update(self.resolved.sampling)
        for key, value in (explicit or {}).items():
            if value is not None:
                out[key] = value
        return out

    def sampling_sources(self, explicit: Optional[Mapping[str, Any]] = None) -> Dict[str, str]:
        """For each value :meth:`sampling` returns, who supplied it: ``request``, a distribution, ``engine default``."""
        out = {k: "engine default" for k in self.engine_defaults}
        for key in self.resolved.sampling:
            out[key] = self.resolved.provenance[key].distribution
        for key, value in (explicit or {}).items():
            if value is not None:
                out[key] = "request"
        return out

    # -- parsers ----------------------------------------------------------------------------------
    def _load(self, kind: str, name: Optional[str]) -> Any:
        if not name:
            return None
        from jarvis_core.errors import JarvisError

        registry = self._registry
        try:
            if registry is None:
                from jarvis_core.plugins import get_registry

                registry = get_registry()
            return registry.load("parser", f"{kind}:{name}")
        except (JarvisError, ImportError, AttributeError) as exc:
            warnings.warn(
                f"{kind} parser {name!r} for model {self.model!r} is not available ({exc}); "
                "text is passed through unparsed",
                RuntimeWarning,
                stacklevel=4,
            )
            return None

    def new_tool_parser(self, tools: Any = None) -> Any:
        """A fresh tool-call parser for this family, or None (deprecated: ``parser_plan(tools)``)."""
        from jarvis_core.deprecation import deprecated

        deprecated("ModelAdapter.new_tool_parser", "parser_plan(tools), or postprocess() / the engine's stream")
        cls = self._load("tool", self.tool_parser)
        return cls(tools) if cls is not None else None

    def new_reasoning_parser(self, **options: Any) -> Any:
        """A fresh reasoning parser for this family, or None (deprecated: ``parser_plan(tools)``)."""
        from jarvis_core.deprecation import deprecated

        deprecated("ModelAdapter.new_reasoning_parser", "parser_plan(tools), or postprocess() / the engine's stream")
        cls = self._load("reasoning", self.reasoning_parser)
        return cls(**options) if cls is not None else None

    def parser_plan(self, tools: Any = None) -> ParserPlan:
        """Which of the family's parsers apply to an answer to a request with (or without) ``tools``
        (:meth:`ParserPlan.choose <jarvis_core.parsers.compose.ParserPlan.choose>` is the rule). Parser
        classes are loaded once per adapter; one that is not installed is warned about once and left out."""
        plan = self._plans.get(bool(tools))
        if plan is None:
            if self._classes is None:
                self._classes = (self._load("reasoning", self.reasoning_parser), self._load("tool", self.tool_parser))
            plan = self._plans[bool(tools)] = ParserPlan.choose(*self._classes, tools)
        return plan

    def needs_postprocessing(self, tools: Any = None) -> bool:
        """True when an answer to a request with (or without) ``tools`` may need the family's parsers; when
        False, :meth:`postprocess` and :meth:`stream_processor` would change nothing and may be skipped."""
        return self.parser_plan(tools).needed

    def derived(self, key: Hashable, build: Callable[[ModelAdapter], Any]) -> Any:
        """``build(self)``, computed once and kept with this adapter under ``key``: what an engine derives from
        the model's defaults alone (its wire form of the default sampling values, say). The adapter cache of
        :meth:`for_model` is then the only per-model cache; engines keep none of their own."""
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = build(self)
            return value

    # -- whole responses --------------------------------------------------------------------------
    def postprocess(self, completion: Completion, tools: Any = None) -> Completion:
        """Split inline reasoning out of ``content`` and, when ``tools`` were given and the response has no
        native tool calls, turn text-form tool calls into ``tool_calls``. Never raises on model output;
        parser diagnostics go to ``metadata["parser_diagnostics"]``."""
        plan = self.parser_plan(tools)
        if not plan.needed:
            return completion
        from jarvis_core.defaults.postprocess import postprocess_completion

        return postprocess_completion(plan, completion, tools)

    # -- streams ----------------------------------------------------------------------------------
    def stream_processor(self, tools: Any = None) -> StreamProcessor:
        """A :class:`~jarvis_core.defaults.stream.StreamProcessor` for one streamed response (with no parser
        to run it passes the chunks through; :meth:`needs_postprocessing` says whether to use one at all)."""
        from jarvis_core.defaults.stream import StreamProcessor

        return StreamProcessor(self.parser_plan(tools), tools)

    def __repr__(self) -> str:
        r = self.resolved
        return f"ModelAdapter({r.model!r}, backend={r.backend!r}, tool_parser={r.tool_parser!r}, " \
            f"reasoning_parser={r.reasoning_parser!r})"

