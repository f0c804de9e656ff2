"""Public names removed while the version read 0.1.0 work again until 1.0.0, each with a warning naming its
replacement and the code that used it; the two that cannot come back raise RemovedAPIError saying so
(docs/contract.md §11)."""

from __future__ import annotations

import warnings

import pytest

from jarvis_core.engine.http import HTTPEngine
from jarvis_core.errors import JarvisDeprecationWarning, PluginError, RemovedAPIError
from jarvis_core.testing import Exchange, ReplayServer

HERE = f" (used by {__name__})"
LINES = "astream_batches(method, path, LineByteDecoder(), ...)"
BYTES = ("the byte decoders of jarvis_core.engine.streams (SSEByteDecoder, NDJSONByteDecoder) through "
         "HTTPEngine.astream_batches")


def _says(name: str, replacement: str) -> str:
    return f"{name} is deprecated since jarvis-core 0.2.0 and will be removed in 1.0.0; use {replacement} instead{HERE}"


class LinesEngine(HTTPEngine):
    engine_id = "lines"

    def generate(self, messages, *, model, **kw):  # pragma: no cover - not used
        raise NotImplementedError

    def list_models(self):  # pragma: no cover - not used
        return []


@pytest.fixture
def server():
    with ReplayServer([Exchange("GET", "/lines", ndjson=[{"a": 1}, {"b": 2}]),
                       Exchange("GET", "/lines", ndjson=[{"a": 1}, {"b": 2}]),
                       Exchange("GET", "/missing", status=404, json={"error": "no such thing"})]) as srv:
        yield srv


async def test_astream_lines_works_and_warns(server):
    engine = LinesEngine(host=server.url)
    with pytest.warns(JarvisDeprecationWarning) as caught:
        async with engine.astream_lines("GET", "/lines") as lines:
            got = [line async for line in lines]
    await engine.aclose()
    assert got == ['{"a": 1}', '{"b": 2}']
    assert [str(w.message) for w in caught] == [_says("HTTPEngine.astream_lines", LINES)]
    assert caught[0].filename == __file__  # attributed to the caller, so the default filter shows it once here


def test_stream_lines_and_stream_response_work_and_warn(server):
    engine = LinesEngine(host=server.url)
    with pytest.warns(JarvisDeprecationWarning) as caught:
        with engine.stream_lines("GET", "/lines") as lines:
            got = list(lines)
        with engine.stream_response("GET", "/lines") as response:
            assert response.status_code == 200
        with pytest.raises(Exception) as failed, engine.stream_response("GET", "/missing"):
            pass
    engine.close()
    assert got == ['{"a": 1}', '{"b": 2}']
    assert type(failed.value).__name__ == "ModelNotFoundError" or failed.value.status_code == 404
    assert [str(w.message) for w in caught] == [
        _says("HTTPEngine.stream_lines", LINES),
        _says("HTTPEngine.stream_response", "astream_response (or astream_batches)"),
        _says("HTTPEngine.stream_response", "astream_response (or astream_batches)"),
    ]


def test_the_line_stream_helpers_work_and_warn():
    with pytest.warns(JarvisDeprecationWarning) as caught:
        from jarvis_core.engine.streams import SSEDecoder, iter_ndjson, iter_sse, iter_sse_json
    assert [str(w.message) for w in caught] == [
        _says("jarvis_core.engine.streams.SSEDecoder", "SSEByteDecoder(events=True)"),
        *(_says(f"jarvis_core.engine.streams.{n}", BYTES) for n in ("iter_ndjson", "iter_sse", "iter_sse_json")),
    ]
    assert [e.data for e in iter_sse(["event: x", "data: a", "", "data: b"])] == ["a", "b"]
    assert list(iter_sse_json(["data: {\"n\": 1}", "", "data: [DONE]", ""])) == [{"n": 1}]
    assert list(iter_ndjson(["{\"n\": 2}", "  "])) == [{"n": 2}]
    assert SSEDecoder().feed("data: x") is None


def test_small_helpers_work_and_warn():
    from jarvis_core.events import EventBus
    from jarvis_core.parsers.base import ToolParseResult

    with pytest.warns(JarvisDeprecationWarning) as caught:
        assert EventBus().has_subscribers() is False
        assert ToolParseResult().tools_called is False
        with ReplayServer([Exchange("GET", "/x", json={})]) as srv:
            assert srv.wait_for_requests(0) == []
    assert [str(w.message) for w in caught] == [
        _says("EventBus.has_subscribers", "publish() unconditionally"),
        _says("ToolParseResult.tools_called", "bool(result.tool_calls)"),
        _says("ReplayServer.wait_for_requests", "wait_until(lambda server: len(server.requests) >= n)"),
    ]


def test_a_removed_event_type_names_its_replacement():
    from jarvis_core.events import EventType

    with pytest.raises(RemovedAPIError) as caught:
        EventType.STREAM_START  # noqa: B018
    assert str(caught.value) == (f"EventType.STREAM_START was removed in jarvis-core 0.2.0; use EventType.INFERENCE_START "
                                 f"(its data has stream=True) instead{HERE}")
    assert isinstance(caught.value, PluginError) and isinstance(caught.value, AttributeError)
    assert (caught.value.removed_in, caught.value.name) == ("0.2.0", "EventType.STREAM_START")
    assert not hasattr(EventType, "STREAM_END")  # still an AttributeError for hasattr
    assert EventType.INFERENCE_START.value  # real members are untouched


def test_unknown_names_are_plain_attribute_errors():
    import jarvis_core.engine.streams as streams

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="has no attribute 'iter_nothing'"):
            streams.iter_nothing  # noqa: B018
