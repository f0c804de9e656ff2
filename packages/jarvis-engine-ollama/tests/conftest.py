"""Shared fixtures of the jarvis-engine-ollama tests: the recorded transcripts and a transport factory."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List

import pytest

DATA = pathlib.Path(__file__).parent / "data"


def _load(name: str) -> List[Dict[str, Any]]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def ollama_transcripts() -> Dict[str, Dict[str, Any]]:
    """Every transcript by id: the recorded ones (``ollama_transcripts.json``) and the hand-written extra
    cases (``ollama_extra_transcripts.json``, ids starting with ``x_``)."""
    out = {}
    for name in ("ollama_transcripts.json", "ollama_extra_transcripts.json"):
        for t in _load(name):
            assert t["id"] not in out, f"duplicate transcript id {t['id']}"
            out[t["id"]] = t
    return out
