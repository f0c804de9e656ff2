"""Fixtures of the jarvis-agents tests: a REAL llama.cpp server (xllamacpp hosting SmolLM2-135M-Instruct) for
the tests marked ``llamacpp``, started once per session on a free port and stopped at the end."""

from __future__ import annotations

from typing import Iterator

import pytest


@pytest.fixture(scope="session")
def llama_url() -> Iterator[str]:
    """The address of a real llama.cpp server with SmolLM2 (skips when xllamacpp or the model is missing)."""
    pytest.importorskip("xllamacpp", reason="the real-server tests need xllamacpp (jarvis-engine-openai-compat[embedded])")
    launch = pytest.importorskip("jarvis_engine_openai_compat.server.launch")
    try:
        path = launch.smollm2_model_path()
    except Exception as exc:  # MissingModelError: it says how to install the model
        pytest.skip(str(exc))
    # One thread: on a loaded 2-core machine two llama.cpp threads wait on each other at every barrier, and
    # SmolLM2 decoded ~8x slower (3-4 tokens/s against 25-30), which made the operative test run for 20+ min.
    with launch.ServerProcess(launch.ServerSpec(path, slots=1, ctx_per_slot=4096, threads=1, alias="smollm2")).start() as server:  # stopped on leaving
        server.wait_ready(timeout=180)
        yield server.url
