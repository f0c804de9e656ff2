"""``jarvis ask --agent operative "…"`` works as written: no operator id given, the operator ``default`` is
used and announced on stderr, and the next ask remembers (the real llamacpp engine against a loopback
server replaying a model's streamed answers)."""

from __future__ import annotations

import pytest

from jarvis_core.cli.main import main
from jarvis_core.testing import Exchange, ReplayServer

pytest.importorskip("jarvis_engine_openai_compat", reason="the llamacpp engine is in jarvis-engine-openai-compat")
pytest.importorskip("jarvis_agents", reason="the operative agent is in jarvis-agents")

pytestmark = pytest.mark.usefixtures("real_registry")  # every installed plugin, a private jarvis home

PROPS = {"chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}


@pytest.mark.parametrize("agent", ["operative", "monitor_operative"])
def test_ask_an_operative_without_an_operator_id(agent, capsys, chat_reply):
    # The answer, then (monitor_operative's default axes) its extra calls, answered with an empty list.
    replies = [Exchange("GET", "/props", json=PROPS),
               chat_reply("Noted."), chat_reply("[]", times=None)]
    with ReplayServer(replies) as server:
        code = main(["ask", "--engine", "llamacpp", "--host", server.url, "--model", "m", "--agent", agent,
                     "remember: the code word is ORCHID"])
        out = capsys.readouterr()
    assert code == 0, out.err
    assert "[operator] no operator id given: remembering as operator 'default'" in out.err
    assert "needs an operator id" not in out.err
