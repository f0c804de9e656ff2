"""Shared fixtures of the jarvis-engine-ollama tests: the recorded transcripts and a transport factory."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List

import pytest

DATA = pathlib.Path(__file__).parent / "data"
#: Recordings of real servers that several packages' tests replay, kept once at the repository's tests/data.
SHARED = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data"


def _load(path: pathlib.Path) -> List[Dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def ollama_transcripts() -> Dict[str, Dict[str, Any]]:
    """Every transcript by id: the recorded ones (``ollama_transcripts.json``) and the hand-written extra
    cases (``ollama_extra_transcripts.json``, ids starting with ``x_``)."""
    out = {}
    for path in (SHARED / "ollama_transcripts.json", DATA / "ollama_extra_transcripts.json"):
        for t in _load(path):
            assert t["id"] not in out, f"duplicate transcript id {t['id']}"
            out[t["id"]] = t
    return out
