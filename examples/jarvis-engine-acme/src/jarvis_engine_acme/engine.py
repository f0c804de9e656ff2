"""AcmeEngine: the Acme chat protocol over HTTP (see README.md for the wire format).

Built on :class:`jarvis_core.engine.http.HTTPEngine`: one pooled client per engine, typed errors for error
statuses and transport failures, the key kept out of reprs and messages. Sampling values and text tool calls
go through :class:`jarvis_core.defaults.ModelAdapter`, so the ``acme`` family rule of this plugin (and the
user's ``[model_defaults]``) apply.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Sequence, Tuple

from jarvis_core.defaults import ModelAdapter
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.engine.messages import messages_to_dicts, tools_to_openai
from jarvis_core.engine.streams import NDJSONByteDecoder
from jarvis_core.errors import StreamError
from jarvis_core.types import Completion, MessageLike, StreamChunk, Usage, normalize_finish_reason

PATH = "/api/chat"
#: The sampling values the Acme server understands (the others a family rule may set are not sent).
WIRE_OPTIONS = ("temperature", "top_p", "seed")


class AcmeEngine(HTTPEngine):
    """An engine for the Acme chat server. Options: ``top_p``, ``seed``."""

    engine_id = "acme"
    default_host = "http://127.0.0.1:9300"
    health_path = "/health"
    allowed_options = frozenset({"top_p", "seed"})

    def __init__(
        self,
        *,
        host: Optional[str] = None,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: float = 120.0,
        model_defaults: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(host=host, base_url=base_url, api_key=api_key, timeout=timeout)
        self.model_defaults = model_defaults  # the user's [model_defaults], passed by create_engine

    def _request(self, messages: Sequence[MessageLike], model: str, temperature: Optional[float], max_tokens: int,
                 tools: Any, options: Dict[str, Any], stream: bool) -> Tuple[ModelAdapter, Dict[str, Any]]:
        self.check_options(options)
        adapter = ModelAdapter.for_model(model, self.engine_id, user_rules=self.model_defaults)
        sampling = adapter.sampling({"temperature": temperature, **options})
        body: Dict[str, Any] = {
            "model": model,
            "messages": messages_to_dicts(messages),
            "stream": stream,
            "options": {"max_tokens": max_tokens, **{k: v for k, v in sampling.items() if k in WIRE_OPTIONS}},
        }
        if tools:
            body["tools"] = tools_to_openai(tools)
        return adapter, body

    def generate(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
                 max_tokens: int = 1024, tools: Any = None, **options: Any) -> Completion:
        adapter, body = self._request(messages, model, temperature, max_tokens, tools, options, stream=False)
        data = self.request_json("POST", PATH, json_body=body, model=model)
        message = data.get("message") or {}
        completion = Completion(
            content=message.get("content") or "",
            usage=_usage(data.get("usage")) or Usage(),
            model=model,
            finish_reason=normalize_finish_reason(data.get("finish")),
        )
        return adapter.postprocess(completion, tools=tools)  # text <call> blocks -> tool_calls

    async def stream_full(self, messages: Sequence[MessageLike], *, model: str, temperature: Optional[float] = None,
                          max_tokens: int = 1024, tools: Any = None, **options: Any) -> AsyncIterator[StreamChunk]:
        adapter, body = self._request(messages, model, temperature, max_tokens, tools, options, stream=True)
        processor = adapter.stream_processor(tools=tools)
        async with self.astream_batches("POST", PATH, NDJSONByteDecoder(), json_body=body, model=model) as batches:
            async for events in batches:  # one batch per network read: the fast path
                for event in events:  # each line's JSON value (blank lines skipped; malformed JSON -> StreamError)
                    if not isinstance(event, dict):
                        raise StreamError(f"acme: a stream line is not a JSON object: {str(event)[:200]!r}",
                                          engine_id=self.engine_id)
                    if "error" in event:
                        raise StreamError(f"acme: the server failed mid-answer: {self.redact(event['error'])}",
                                          engine_id=self.engine_id)
                    if event.get("done"):
                        last = StreamChunk(finish_reason=normalize_finish_reason(event.get("finish")),
                                           usage=_usage(event.get("usage")))
                        for chunk in processor.feed(last):
                            yield chunk
                        return
                    for chunk in processor.feed(StreamChunk(content=event.get("delta") or "")):
                        yield chunk
        raise StreamError("acme: the stream ended without its final (done) line; the server may have stopped "
                          "mid-answer", engine_id=self.engine_id)

    def list_models(self) -> List[str]:
        return [str(m) for m in self.request_json("GET", "/api/models").get("models", [])]


def _usage(raw: Any) -> Optional[Usage]:
    if not isinstance(raw, dict):
        return None
    prompt, completion = int(raw.get("input", 0)), int(raw.get("output", 0))
    return Usage(prompt, completion, prompt + completion)
