"""A base for engines that wrap another one (:class:`~jarvis_core.instrumented.InstrumentedEngine`,
:class:`~jarvis_core.retry.RetryingEngine`): identity, management, secrets, context managers and any
engine-specific attribute are the wrapped engine's; a subclass overrides the inference calls it changes."""

from __future__ import annotations

from typing import Any, FrozenSet, List, Sequence, TypeVar, Union

from jarvis_core.embeddings import EmbeddingResult
from jarvis_core.engine.base import InferenceEngine, supports_embeddings

__all__ = ["WrappedEngine"]

W = TypeVar("W", bound="WrappedEngine")


class WrappedEngine(InferenceEngine):
    """Forwards everything to ``engine``; the inference calls too, until a subclass overrides them."""

    def __init__(self, engine: InferenceEngine) -> None:
        self.engine = engine

    @property
    def engine_id(self) -> str:  # type: ignore[override]  # read-only here: it is the wrapped engine's
        return self.engine.engine_id

    @property
    def allowed_options(self) -> FrozenSet[str]:  # type: ignore[override]
        return self.engine.allowed_options

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this wrapper does not define: engine-specific extras.
        if name == "engine":
            raise AttributeError(name)
        return getattr(self.engine, name)

    def check_options(self, options: Any) -> None:
        self.engine.check_options(options)

    @property
    def supports_embeddings(self) -> bool:
        return supports_embeddings(self.engine)

    def embed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        return self.engine.embed(inputs, model=model, **options)

    async def aembed(self, inputs: Union[str, Sequence[str]], *, model: str, **options: Any) -> EmbeddingResult:
        return await self.engine.aembed(inputs, model=model, **options)

    def list_models(self) -> List[str]:
        return self.engine.list_models()

    def health(self) -> bool:
        return self.engine.health()

    def prepare(self, model: str) -> None:
        self.engine.prepare(model)

    def secret_values(self) -> Sequence[Any]:
        """The wrapped engine's secrets (its own override point decides what they are)."""
        return self.engine.secret_values()

    def close(self) -> None:
        self.engine.close()

    async def aclose(self) -> None:
        await self.engine.aclose()

    def __enter__(self: W) -> W:
        self.engine.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.engine.__exit__(*exc)

    async def __aenter__(self: W) -> W:
        await self.engine.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.engine.__aexit__(*exc)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.engine!r}>"
