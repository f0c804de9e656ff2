"""A kit for testing jarvis plugins: replay server, fake engine, in-process plugins, engine conformance.

Import it explicitly (``import jarvis_core.testing``); ``import jarvis_core`` never loads it. Nothing here
imports pytest at import time, except :mod:`jarvis_core.testing.pytest_plugin` (the fixtures).

- :class:`ReplayServer` / :class:`Exchange`: a loopback HTTP/1.1 server replaying recorded exchanges
  (JSON, NDJSON, SSE, raw chunks; delays, broken streams, hangs); :func:`exchanges_from_transcripts` loads
  the recorded transcript shapes.
- :class:`FakeEngine`: a scripted :class:`~jarvis_core.engine.base.InferenceEngine` that records its calls.
- :class:`RecordingProxy`: a loopback proxy in front of a real server that keeps every request it forwards.
- :func:`registry_with` / :func:`installed_registry` / :func:`simple_plugin`: in-process plugins for one
  test; :class:`RecordingBus`: an event bus that keeps what was published.
- :func:`source_plugin` / :func:`source_registry`: the plugin under test, registered from its source
  checkout (its ``pyproject.toml`` entry points) next to the installed ones, without installing it.
- :class:`EngineConformance`: the checks every engine plugin runs against its own engine; the scenario
  constants (:data:`PROMPT`, :data:`TOOL_PROMPT`, :data:`WEATHER_TOOL`, :data:`SECRET`) and
  :class:`LiveServer` for pointing it at a real server.
- :func:`load_prompt_cases` / :func:`check_prompt_case` / :func:`parse_reply` / :func:`prompt_case_id`:
  recorded replies each prompt provider must read as recorded; :func:`check_shared_prompt` (with
  :data:`SAMPLE_CONTEXT`, :data:`SAMPLE_COMMANDS`): the blocks every prompt shares;
  :func:`check_default_provider`: the backend-default rule that names a provider for a model.
- :func:`store_conformance`: the checks every :class:`~jarvis_core.stores.SessionStore` /
  :class:`~jarvis_core.stores.StateStore` implementation passes (the core's SQLite store and a server's).

See ``docs/testing-plugins.md`` for a worked example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.lazy import lazy_exports

_LAZY = {
    "Exchange": "jarvis_core.testing.replay",
    "RecordedRequest": "jarvis_core.testing.replay",
    "ReplayServer": "jarvis_core.testing.replay",
    "UNMATCHED_STATUS": "jarvis_core.testing.replay",
    "body_matches": "jarvis_core.testing.replay",
    "exchange_from_transcript": "jarvis_core.testing.transcripts",
    "exchanges_from_transcripts": "jarvis_core.testing.transcripts",
    "load_transcripts": "jarvis_core.testing.transcripts",
    "split_raw_sse": "jarvis_core.testing.transcripts",
    "FakeEngine": "jarvis_core.testing.fake_engine",
    "EngineCall": "jarvis_core.testing.fake_engine",
    "registry_with": "jarvis_core.testing.plugins",
    "installed_registry": "jarvis_core.testing.plugins",
    "simple_plugin": "jarvis_core.testing.plugins",
    "RecordingBus": "jarvis_core.testing.recording_bus",
    "RecordingProxy": "jarvis_core.testing.recording_proxy",
    "EngineConformance": "jarvis_core.testing.conformance",
    "run_engine_conformance": "jarvis_core.testing.conformance",
    "closed_port_url": "jarvis_core.testing.conformance",
    "ConformanceSkip": "jarvis_core.testing.conformance",
    "LiveServer": "jarvis_core.testing.conformance",
    "PROMPT": "jarvis_core.testing.conformance",
    "SCENARIOS": "jarvis_core.testing.conformance",
    "SECRET": "jarvis_core.testing.conformance",
    "TOOL_PROMPT": "jarvis_core.testing.conformance",
    "WEATHER_TOOL": "jarvis_core.testing.conformance",
    "source_plugin": "jarvis_core.testing.source_checkout",
    "source_registry": "jarvis_core.testing.source_checkout",
    "store_conformance": "jarvis_core.testing.store_conformance",
    "check_default_provider": "jarvis_core.testing.prompt_cases",
    "check_prompt_case": "jarvis_core.testing.prompt_cases",
    "check_shared_prompt": "jarvis_core.testing.prompt_cases",
    "SAMPLE_COMMANDS": "jarvis_core.testing.prompt_cases",
    "SAMPLE_CONTEXT": "jarvis_core.testing.prompt_cases",
    "load_prompt_cases": "jarvis_core.testing.prompt_cases",
    "parse_reply": "jarvis_core.testing.prompt_cases",
    "prompt_case_id": "jarvis_core.testing.prompt_cases",
}

__all__ = [
    "PROMPT",
    "SAMPLE_COMMANDS",
    "SAMPLE_CONTEXT",
    "SCENARIOS",
    "SECRET",
    "TOOL_PROMPT",
    "WEATHER_TOOL",
    "ConformanceSkip",
    "EngineCall",
    "EngineConformance",
    "Exchange",
    "FakeEngine",
    "RecordedRequest",
    "LiveServer",
    "RecordingBus",
    "RecordingProxy",
    "ReplayServer",
    "UNMATCHED_STATUS",
    "body_matches",
    "check_default_provider",
    "check_prompt_case",
    "check_shared_prompt",
    "closed_port_url",
    "exchange_from_transcript",
    "exchanges_from_transcripts",
    "installed_registry",
    "load_prompt_cases",
    "load_transcripts",
    "parse_reply",
    "prompt_case_id",
    "registry_with",
    "run_engine_conformance",
    "simple_plugin",
    "source_plugin",
    "source_registry",
    "split_raw_sse",
    "store_conformance",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


if TYPE_CHECKING:  # pragma: no cover
    from jarvis_core.testing.conformance import (
        PROMPT,
        SCENARIOS,
        SECRET,
        TOOL_PROMPT,
        WEATHER_TOOL,
        ConformanceSkip,
        EngineConformance,
        LiveServer,
        closed_port_url,
        run_engine_conformance,
    )
    from jarvis_core.testing.fake_engine import EngineCall, FakeEngine
    from jarvis_core.testing.plugins import installed_registry, registry_with, simple_plugin
    from jarvis_core.testing.prompt_cases import (
        SAMPLE_COMMANDS,
        SAMPLE_CONTEXT,
        check_default_provider,
        check_prompt_case,
        check_shared_prompt,
        load_prompt_cases,
        parse_reply,
        prompt_case_id,
    )
    from jarvis_core.testing.recording_bus import RecordingBus
    from jarvis_core.testing.recording_proxy import RecordingProxy
    from jarvis_core.testing.replay import UNMATCHED_STATUS, Exchange, RecordedRequest, ReplayServer, body_matches
    from jarvis_core.testing.source_checkout import source_plugin, source_registry
    from jarvis_core.testing.store_conformance import store_conformance
    from jarvis_core.testing.transcripts import (
        exchange_from_transcript,
        exchanges_from_transcripts,
        load_transcripts,
        split_raw_sse,
    )
