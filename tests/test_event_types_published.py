"""Every EventType member has a publisher somewhere in the packages' sources (no type nobody sends)."""

from __future__ import annotations

import pathlib
import re

from jarvis_core.events import EventType

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_event_type_is_published():
    sources = "\n".join(p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("packages/*/src/**/*.py")))
    published = set(re.findall(r"publish\w*\(\s*EventType\.([A-Z_]+)", sources))
    assert published, "the scan found the publishers"
    assert set(EventType.__members__) - published == set()
