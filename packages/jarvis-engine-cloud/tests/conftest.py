"""Shared helpers of the jarvis-engine-cloud tests: transcripts, engine factory, stream aggregation.

Helpers are handed out through the ``cloud`` fixture (test modules here are not a package, so they cannot
import each other).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from jarvis_core.types import Completion, StreamChunk, ToolSpec
from jarvis_engine_cloud.engine import CloudEngine

DATA = pathlib.Path(__file__).parent / "data"
#: Recordings of real servers that several packages' tests replay, kept once at the repository's tests/data.
SHARED = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data"
FILES = (SHARED / "cloud_transcripts.json", DATA / "openai_cloud_transcripts.json")
KEY_PARAM = {"openai": "openai_api_key", "anthropic": "anthropic_api_key", "gemini": "gemini_api_key"}
URL_PARAM = {"openai": "openai_base_url", "anthropic": "anthropic_base_url", "gemini": "gemini_base_url"}
TEST_KEY = "sk-test-cloud-0000"


def load_all() -> Dict[str, Dict[str, Any]]:
    out: Dict[str, Dict[str, Any]] = {}
    for name in FILES:
        for t in json.loads(name.read_text(encoding="utf-8")):
            assert t["id"] not in out, f"duplicate transcript id {t['id']}"
            out[t["id"]] = t
    return out


class Sleeps:
    """Records the delays the retry policy asked for, without waiting."""

    def __init__(self) -> None:
        self.delays: List[float] = []
        self.awaited = 0  # how many of them were waited the async way

    def __call__(self, delay: float) -> None:
        self.delays.append(delay)

    async def asleep(self, delay: float) -> None:
        self.delays.append(delay)
        self.awaited += 1


class CloudKit:
    """What the ``cloud`` fixture hands out."""

    transcripts = load_all()

    def __init__(self) -> None:
        self.sleeps = Sleeps()

    def engine(self, provider: str, url: str, *, key: str = TEST_KEY, **kw: Any) -> CloudEngine:
        """A CloudEngine whose ``provider`` points at ``url`` (no environment, recorded sleeps)."""
        options: Dict[str, Any] = {
            "environ": {},
            URL_PARAM[provider]: url + "/v1" if provider == "openai" else url,  # OpenAI's base URL names /v1
            KEY_PARAM[provider]: key,
            "sleep": self.sleeps,
            "async_sleep": self.sleeps.asleep,
        }
        if provider == "openai":
            options["openai_max_tokens_field"] = "max_completion_tokens"
        options.update(kw)
        return CloudEngine(**options)

    @staticmethod
    def call_of(t: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
        """``(provider, generate kwargs)`` that make the engine send the transcript's request."""
        provider, body, url = t["provider"], t["request"]["body"], t["request"]["url"]
        kwargs: Dict[str, Any] = {"options": {}}
        if provider == "anthropic":
            kwargs["model"] = body["model"]
            kwargs["messages"] = body["messages"]
            kwargs["max_tokens"] = body["max_tokens"]
            kwargs["tools"] = [ToolSpec(x["name"], x["description"], x["input_schema"]) for x in body.get("tools", ())]
            if "thinking" in body:
                kwargs["options"]["thinking"] = body["thinking"]
            stream = bool(body.get("stream"))
        elif provider == "gemini":
            kwargs["model"] = url.split("/models/")[1].split(":")[0]
            kwargs["messages"] = [{"role": c["role"], "content": c["parts"][0]["text"]} for c in body["contents"]]
            decls = [d for tool in body.get("tools", ()) for d in tool["functionDeclarations"]]
            kwargs["tools"] = [ToolSpec(d["name"], d["description"], d["parameters"]) for d in decls]
            config = body.get("generationConfig", {})
            if "maxOutputTokens" in config:
                kwargs["max_tokens"] = config["maxOutputTokens"]
            if "thinkingConfig" in config:
                kwargs["options"]["thinking"] = config["thinkingConfig"]
            mode = body.get("toolConfig", {}).get("functionCallingConfig", {}).get("mode")
            if mode:
                kwargs["options"]["tool_choice"] = {"AUTO": "auto", "ANY": "required", "NONE": "none"}[mode]
            stream = "streamGenerateContent" in url
        else:
            kwargs["model"] = body["model"]
            kwargs["messages"] = body["messages"]
            kwargs["max_tokens"] = body.get("max_completion_tokens", 1024)
            kwargs["tools"] = body.get("tools") or None
            if "reasoning_effort" in body:
                kwargs["options"]["reasoning_effort"] = body["reasoning_effort"]
            stream = bool(body.get("stream"))
        kwargs["stream"] = stream
        if not kwargs["tools"]:
            kwargs["tools"] = None
        return provider, kwargs

    @staticmethod
    def aggregate(chunks: Sequence[StreamChunk]) -> Dict[str, Any]:
        """A stream's chunks added up into the ``expected_normalized`` shape."""
        content = "".join(c.content or "" for c in chunks) or None
        reasoning = "".join(c.reasoning or "" for c in chunks) or None
        calls = [call for c in chunks for call in c.tool_calls]
        usages = [c.usage for c in chunks if c.usage is not None]
        finishing = [c.finish_reason for c in chunks if c.finish_reason is not None]
        assert len(finishing) == 1 and chunks[-1].finish_reason is not None, "one finish chunk, last"
        assert len(usages) <= 1, "usage arrives once"
        return {
            "content": content,
            "reasoning": reasoning,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
            "usage": _usage(usages[0]) if usages else None,
            "finish_reason": finishing[0],
            "metadata": dict(chunks[-1].metadata),
        }

    @staticmethod
    def normalized(c: Completion) -> Dict[str, Any]:
        return {
            "content": c.content,
            "reasoning": c.reasoning,
            "tool_calls": [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in c.tool_calls],
            "usage": _usage(c.usage),
            "finish_reason": c.finish_reason,
            "metadata": dict(c.metadata),
        }

    @staticmethod
    def assert_matches(actual: Dict[str, Any], expected: Dict[str, Any]) -> None:
        """Compare with ``expected_normalized`` (arguments as JSON values; ``<generated>`` ids: any unique id)."""
        for field in ("content", "reasoning", "usage", "finish_reason"):
            assert actual[field] == expected[field], f"{field}: {actual[field]!r} != {expected[field]!r}"
        assert len(actual["tool_calls"]) == len(expected["tool_calls"])
        for got, want in zip(actual["tool_calls"], expected["tool_calls"], strict=True):
            assert got["name"] == want["name"]
            assert json.loads(got["arguments"]) == json.loads(want["arguments"])
            if want["id"] == "<generated>":
                assert got["id"]
            else:
                assert got["id"] == want["id"]
        ids = [c["id"] for c in actual["tool_calls"]]
        assert len(set(ids)) == len(ids), "tool-call ids are unique"
        if expected.get("error") and expected["error"].get("status") == 200:
            error = actual["metadata"].get("error")
            assert error == expected["error"], f"surfaced error {error!r} != {expected['error']!r}"


def _usage(u: Optional[Any]) -> Optional[Dict[str, int]]:
    if u is None:
        return None
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens}


@pytest.fixture
def cloud() -> CloudKit:
    return CloudKit()
