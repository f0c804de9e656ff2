"""``jarvis serve`` as users run it (a subprocess) over a loopback vLLM-style server that answers 429 with
``Retry-After`` and then 200: the client gets the answer (the served engine retried once), and ``GET /metrics``,
parsed with prometheus_client's own parser, counts the request, its tokens and the retry."""

from __future__ import annotations

import json
import os
import signal

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families

from jarvis_core.testing import Exchange, ReplayServer

CHAT = "/v1/chat/completions"
REPLY = {"id": "c", "object": "chat.completion", "model": "m", "usage": {"prompt_tokens": 9, "completion_tokens": 3,
                                                                       "total_tokens": 12},
         "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Paris"}}]}


def test_serve_retries_a_429_and_counts_it_in_metrics(tmp_path, jarvis_serve):
    backend = [Exchange("POST", CHAT, status=429, headers={"retry-after": "1"}, times=1,
                        json={"error": {"message": "slow down"}}),
               Exchange("POST", CHAT, json=REPLY),
               Exchange("GET", "/v1/models", json={"object": "list", "data": [{"id": "m", "object": "model"}]}),
               Exchange("GET", "/health", json={})]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and not k.endswith("_HOST")}
    env.update(JARVIS_HOME=str(tmp_path), JARVIS_NO_LOG="1")
    with ReplayServer(backend) as server:
        proc, url = jarvis_serve("--engine", "vllm", "--engine-host", server.url, "--model", "m", "--no-agents",
                                 env=env, within=120)
        try:
            client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
            answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "capital?"}])
            assert answer.choices[0].message.content == "Paris"
            text = httpx.get(url + "/metrics", timeout=10).text
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
        chats = [r for r in server.requests if r.path == CHAT]
    assert len(chats) == 2
    found = {(s.name, json.dumps(s.labels, sort_keys=True)): s.value
             for family in text_string_to_metric_families(text) for s in family.samples}
    assert found[("jarvis_requests_total", json.dumps({"engine": "vllm", "model": "m", "status": "ok",
                                                      "stream": "false"}, sort_keys=True))] == 1
    assert found[("jarvis_retries_total", json.dumps({"engine": "vllm", "status": "429"}, sort_keys=True))] == 1
    assert found[("jarvis_tokens_total", json.dumps({"engine": "vllm", "kind": "prompt", "model": "m"},
                                                    sort_keys=True))] == 9
