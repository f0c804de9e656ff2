"""Fixtures of the jarvis-agents tests: a REAL llama.cpp server (xllamacpp hosting SmolLM2-135M-Instruct) for
the tests marked ``llamacpp``, started once per session on a free port and stopped at the end; and
``run_dirs``, where the sandbox makes its runs' work directories during one test."""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Iterator

import pytest


@pytest.fixture
def run_dirs(monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """The system temporary directory for this test (the sandbox's runs make their ``jarvis-sandbox-*``
    directories in it), so a test sees its own runs' directories on the host and no one else's. It sits in
    ``/tmp``, world-traversable, as ``/tmp`` is: the limits-only sandbox's user must reach its directory."""
    runs = pathlib.Path(tempfile.mkdtemp(prefix="jarvis-test-runs-", dir="/tmp"))
    runs.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(runs))
    try:
        yield runs
    finally:
        shutil.rmtree(runs, ignore_errors=True)


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
