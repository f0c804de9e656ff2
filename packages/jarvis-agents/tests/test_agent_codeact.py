"""native_openhands (codeact) against a scripted engine, with real sandbox processes and real loopback HTTP
servers: each fence style runs and its output reaches the next turn, state lasts between turns, Hermes and
Action text run tools, native calls come first, URL prefetch is off by default and refuses a redirect to
another loopback port, observations are cut to the context window the engine reports."""

from __future__ import annotations

import http.server
import json
import os
import threading
from typing import Iterator, List, Tuple

import pytest

import jarvis_agents.plugin
from jarvis_agents.agents.codeact import CodeActAgent
from jarvis_agents.tools.calculator import Calculator
from jarvis_agents.tools.web import WebFetchTool
from jarvis_core.agents import Notice, create_agent
from jarvis_core.errors import ConfigError
from jarvis_core.events import EventType
from jarvis_core.testing import FakeEngine, RecordingBus, installed_registry
from jarvis_core.tools import ToolExecutor
from jarvis_core.types import AgentContext, Completion, Message, Role, ToolCall

SECRET = "sk-codeact-test-secret-value"


def agent(engine, **kwargs):
    return CodeActAgent(engine, model="m", tools=kwargs.pop("tools", [Calculator()]), **kwargs)


def last_text(call) -> str:
    return call.messages[-1].content or ""


# -- code ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fence", ["```python", "```py", "```"])
def test_each_fence_style_runs_and_its_output_reaches_the_next_turn(fence):
    engine = FakeEngine([f"Let me compute.\n{fence}\nprint(6 * 7)\n```", "It is 42."])
    result = agent(engine).run("What is 6*7?")
    assert result.content == "It is 42." and result.stop_reason == "final"
    (cell,) = result.tool_results
    assert cell.name == "python" and cell.ok and cell.content == "42"
    assert engine.calls[1].messages[-1].role is Role.USER and last_text(engine.calls[1]) == "Output:\n42"


def test_all_blocks_of_a_turn_are_joined_other_languages_do_not_run_and_state_lasts_between_turns():
    engine = FakeEngine([
        "```python\nx = 40\n```\nThen:\n```bash\necho hi && false\n```\n```py\nx += 1\nprint(x)\n```",
        "```python\nprint(x + 1)\n```",
        "42",
    ])
    result = agent(engine).run("count")
    assert [r.content for r in result.tool_results] == ["41", "42"]
    assert last_text(engine.calls[2]) == "Output:\n42" and result.content == "42"


def test_code_runs_in_the_sandbox_not_in_this_process(monkeypatch, run_dirs):
    monkeypatch.setenv("JARVIS_TEST_SECRET", SECRET)
    engine = FakeEngine([
        "```python\nimport os\nprint(os.getpid(), os.getcwd(), os.environ.get('JARVIS_TEST_SECRET'))\n```",
        "done",
    ])
    result = agent(engine).run("where are you?")
    pid, cwd, secret = result.tool_results[0].content.split()
    assert int(pid) != os.getpid() and cwd == "/work"  # the jail's path for the run's directory
    assert secret == "None" and SECRET not in last_text(engine.calls[1])
    assert list(run_dirs.iterdir()) == []  # the REPL's directory is gone with the run (its process: test_sandbox_jail)


def test_a_failing_cell_is_a_failed_result_and_the_run_goes_on():
    engine = FakeEngine(["```python\nprint('before')\n1/0\n```", "```python\nexit(3)\n```", "gave up"])
    result = agent(engine).run("divide")
    first, second = result.tool_results
    assert not first.ok and "before" in first.content and "ZeroDivisionError" in first.content
    assert not second.ok and "SystemExit" in second.content
    assert result.content == "gave up" and result.stop_reason == "final"


# -- text tool calls -----------------------------------------------------------------------------------
def test_a_hermes_call_in_the_text_runs_the_tool():
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
    engine = FakeEngine([f"I will use the calculator.\n{call}", "1+1 is 2."])
    result = agent(engine).run("1+1?")
    (tool,) = result.tool_results
    assert tool.name == "calculator" and tool.ok and tool.content == "2"
    assert last_text(engine.calls[1]) == "Result of calculator: 2" and result.content == "1+1 is 2."


def test_an_unreadable_hermes_block_is_corrected_once_and_never_emptied_from_the_answer():
    broken = '<tool_call>{"name": "calculator", "arguments": {"expression": </tool_call>'
    engine = FakeEngine([broken, broken])
    result = agent(engine).run("1+1?")
    assert "could not be read" in last_text(engine.calls[1])
    assert result.content == broken and result.tool_results == ()


def test_an_action_call_runs_the_tool():
    engine = FakeEngine(['Thought: add\nAction: calculator\nAction Input: {"expression": "2+3"}', "5"])
    result = agent(engine).run("2+3?")
    assert [r.content for r in result.tool_results] == ["5"] and result.content == "5"
    assert last_text(engine.calls[1]) == "Result of calculator: 5"


def test_native_tool_calls_come_first_and_their_results_are_tool_messages():
    native = Completion(content="```python\nprint('not run')\n```",
                        tool_calls=[ToolCall("c1", "calculator", '{"expression": "3*3"}')])
    engine = FakeEngine([native, "9"])
    result = agent(engine).run("3*3?")
    assert [(r.name, r.content) for r in result.tool_results] == [("calculator", "9")]
    tool_message = engine.calls[1].messages[-1]
    assert tool_message.role is Role.TOOL and tool_message.tool_call_id == "c1" and tool_message.content == "9"
    assert engine.calls[0].tools and [t.name for t in engine.calls[0].tools] == ["calculator"]


def test_registered_under_both_keys():
    with installed_registry(jarvis_agents.plugin):
        for key in ("native_openhands", "codeact"):
            built = create_agent(key, FakeEngine(["ok"]), model="m")
            assert isinstance(built, CodeActAgent) and built.agent_id == "native_openhands"


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="url_prefetch"):
        agent(FakeEngine(), url_prefetch="yes")
    with pytest.raises(ConfigError, match="context_window"):
        agent(FakeEngine(), context_window=0)
    with pytest.raises(ConfigError, match="allow"):
        agent(FakeEngine(), url_prefetch=True, prefetch_options={"allow": ["localhost"]})


# -- the context window --------------------------------------------------------------------------------
class WindowedEngine(FakeEngine):
    """A scripted engine that reports its model's context window."""

    def __init__(self, script, window: int) -> None:
        super().__init__(script)
        self.window = window

    def context_window(self, model: str) -> int:
        return self.window


def test_an_observation_is_cut_to_the_window_the_engine_reports():
    code = "```python\nprint('a' * 50000)\n```"
    small = WindowedEngine([code, "done"], window=4000)
    agent(small, max_output_chars=60000).run("print a lot")
    seen = last_text(small.calls[1])
    assert "[output truncated: 50000 characters" in seen and len(seen) < 4000 * 3

    large = WindowedEngine([code, "done"], window=100_000)
    agent(large, max_output_chars=60000).run("print a lot")
    assert last_text(large.calls[1]) == "Output:\n" + "a" * 50000


def test_without_an_engine_window_the_default_is_announced():
    async def events():
        return [e async for e in agent(FakeEngine(["ok"])).astream("hi")]

    import asyncio

    notices = [e for e in asyncio.run(events()) if isinstance(e, Notice) and e.kind == "context_window"]
    assert notices and "default" in notices[0].message


# -- URL prefetch over real loopback servers -----------------------------------------------------------
class Server:
    """A loopback HTTP server answering every GET with ``(status, headers, body)`` and counting the hits."""

    def __init__(self, answer: Tuple[int, dict, bytes]) -> None:
        self.answer = answer
        self.hits: List[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.hits.append(self.path)
                status, headers, body = owner.answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[List[Server]]:
    made: List[Server] = []
    yield made
    for server in made:
        server.close()


def page_server(servers, body: str) -> Server:
    server = Server((200, {"Content-Type": "text/html; charset=utf-8"}, body.encode()))
    servers.append(server)
    return server


CONTEXT = AgentContext(messages=[Message.user("earlier question"), Message.assistant("earlier answer")])


def test_prefetch_is_off_by_default(servers):
    page = page_server(servers, "<p>ORCHID page</p>")
    engine = FakeEngine(["noted"])
    result = agent(engine).run(f"Summarise {page.url}", CONTEXT)
    assert page.hits == [] and result.tool_results == ()
    assert last_text(engine.calls[0]) == f"Summarise {page.url}"


def test_prefetch_fetches_an_allowed_page_through_the_executor(servers):
    page = page_server(servers, "<html><script>x()</script><p>The code word is ORCHID.</p></html>")
    engine, bus = FakeEngine(["ORCHID"]), RecordingBus()
    result = agent(engine, bus=bus, url_prefetch=True,
                   prefetch_options={"allow": [f"127.0.0.1:{page.port}"]}).run(f"Read {page.url}", CONTEXT)
    (fetch,) = result.tool_results
    assert fetch.name == "web_fetch" and fetch.ok and page.hits == ["/"]
    sent = engine.calls[0].messages
    assert [m.content for m in sent[1:3]] == ["earlier question", "earlier answer"]  # the context is kept
    assert "The code word is ORCHID." in sent[-1].content and "x()" not in sent[-1].content
    assert [e.data["name"] for e in bus.of_type(EventType.TOOL_CALL_END)] == ["web_fetch"]


def test_prefetch_refuses_a_redirect_to_another_loopback_port(servers):
    target = page_server(servers, "<p>internal secret</p>")
    redirect = Server((302, {"Location": target.url + "admin"}, b""))
    servers.append(redirect)
    engine = FakeEngine(["could not read it"])
    result = agent(engine, url_prefetch=True,
                   prefetch_options={"allow": [f"127.0.0.1:{redirect.port}"]}).run(f"Read {redirect.url}", CONTEXT)
    (fetch,) = result.tool_results
    assert not fetch.ok and "refused" in fetch.content and f"port {target.port}" in fetch.content
    assert redirect.hits == ["/"] and target.hits == []  # the first hop ran, the second was never sent
    sent = engine.calls[0].messages
    assert [m.content for m in sent[1:3]] == ["earlier question", "earlier answer"]
    assert "not fetched" in sent[-1].content and "internal secret" not in sent[-1].content
    assert result.content == "could not read it" and result.stop_reason == "final"


def test_web_fetch_refuses_loopback_and_odd_urls_without_sending_anything(servers):
    page = page_server(servers, "<p>hello</p>")
    executor = ToolExecutor([WebFetchTool()])
    for url in (page.url, f"http://localhost:{page.port}/", "file:///etc/passwd", f"http://u:p@127.0.0.1:{page.port}/",
                "http://169.254.169.254/latest/meta-data/"):
        result = executor.execute(ToolCall("c", "web_fetch", json.dumps({"url": url})))
        assert not result.ok and "FetchRefusedError" in result.content, (url, result.content)
    assert page.hits == []
