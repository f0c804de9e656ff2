"""Managed agents over a real uvicorn server on loopback, with real agents from the registry (the core's
``ToolUsingAgent``/``BaseAgent`` registered by an in-process test plugin), real tools and a scripted engine."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from jarvis_core import errors as E
from jarvis_core.testing import FakeEngine
from jarvis_core.types import Completion, Role, StreamChunk, ToolCall, Usage

A = "/v1/managed-agents"
ADD = ToolCall("c1", "add", '{"a": 2, "b": 3}')


def sse_events(managed, response):
    return managed.kit.sse_events(response.iter_lines())


def create(server, agent_type="tool-user", **config):
    r = httpx.post(server.url + A, json={"name": "helper", "agent_type": agent_type, "config": config})
    assert r.status_code == 201, r.text
    return r.json()


def messages(server, agent_id, after=0):
    r = httpx.get(f"{server.url}{A}/{agent_id}/messages", params={"after": after})
    assert r.status_code == 200, r.text
    return r.json()["messages"]


def test_streamed_message_sse_sequence_then_history(managed):
    engine = FakeEngine([Completion(tool_calls=[ADD], usage=Usage(10, 5)),
                         [StreamChunk(content="The sum"), StreamChunk(content=" is 5."),
                          StreamChunk(finish_reason="stop", usage=Usage(20, 4))]])
    server, _ = managed(engine)
    agent = create(server, tools=["add"])
    with httpx.stream("POST", f"{server.url}{A}/{agent['id']}/messages", json={"content": "2+3?", "stream": True}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(managed, r)
    kinds = [name if name != "message" or data == "[DONE]" else "chunk" for name, data in events]
    assert kinds == ["chunk", "tool_calls", "tool_result", "chunk", "chunk", "chunk", "message"], events
    role = events[0][1]["choices"][0]
    assert role["delta"]["role"] == "assistant" and role["finish_reason"] is None
    assert events[1][1] == {"calls": [{"tool_name": "add", "arguments": '{"a": 2, "b": 3}', "id": "c1"}]}
    result = events[2][1]
    assert result["tool_call_id"] == "c1" and result["tool_name"] == "add" and result["ok"] is True
    assert result["output"] == "5" and result["truncated"] is False and result["duration_ms"] >= 0
    assert [e[1]["choices"][0]["delta"]["content"] for e in events[3:5]] == ["The sum", " is 5."]
    final = events[5][1]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["usage"] == {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}
    assert events[6][1] == "[DONE]"
    # The engine saw the tool result in the second call (the agent's own loop ran).
    second = engine.calls[1].messages
    assert second[-1].role is Role.TOOL and second[-1].tool_call_id == "c1" and second[-1].content == "5"
    stored = messages(server, agent["id"])
    assert [(m["role"], m["status"]) for m in stored] == [("user", "delivered"), ("assistant", "complete")]
    assert stored[0]["seq"] < stored[1]["seq"] and stored[1]["content"] == "The sum is 5."
    assert stored[1]["tool_calls"][0]["name"] == "add" and stored[1]["tool_calls"][0]["ok"] is True
    assert messages(server, agent["id"], after=stored[0]["seq"]) == stored[1:]


def test_queued_message_is_delivered_by_the_next_run_and_a_failed_run_loses_nothing(managed):
    engine = FakeEngine([E.ServerError("upstream 500", status_code=500), "Noted."])
    server, _ = managed(engine)
    agent = create(server, "plain")
    queued = httpx.post(f"{server.url}{A}/{agent['id']}/messages", json={"content": "remember milk", "stream": False})
    assert queued.status_code == 202 and queued.json()["status"] == "pending"

    first = httpx.post(f"{server.url}{A}/{agent['id']}/run")
    assert first.status_code == 202
    failed = managed.kit.wait_run(server, agent["id"], first.json()["run_id"])
    assert failed["status"] == "failed" and "upstream 500" in failed["error"]
    assert [(m["role"], m["status"]) for m in messages(server, agent["id"])] == [("user", "pending")]

    second = httpx.post(f"{server.url}{A}/{agent['id']}/run")
    assert second.status_code == 202 and second.json()["messages"] == 1
    ok = managed.kit.wait_run(server, agent["id"], second.json()["run_id"])
    assert ok["status"] == "succeeded" and ok["stop_reason"] == "final"
    stored = messages(server, agent["id"])
    assert [(m["role"], m["status"], m["content"]) for m in stored] == [
        ("user", "delivered", "remember milk"), ("assistant", "complete", "Noted.")]
    assert stored[0]["run_id"] == stored[1]["run_id"] == second.json()["run_id"]
    assert engine.calls[1].messages[-1].content == "remember milk"
    assert httpx.get(f"{server.url}{A}/{agent['id']}").json()["status"] == "idle"


def test_history_is_the_context_of_the_next_message(managed):
    engine = FakeEngine(["Hi Ada.", "Your name is Ada."])
    server, _ = managed(engine)
    agent = create(server, "plain", system_prompt="Be brief.")
    for text in ("I am Ada.", "What is my name?"):
        with httpx.stream("POST", f"{server.url}{A}/{agent['id']}/messages", json={"content": text, "stream": True}) as r:
            r.read()
    sent = engine.calls[1].messages
    assert [(m.role, m.content) for m in sent] == [
        (Role.SYSTEM, "Be brief."), (Role.USER, "I am Ada."), (Role.ASSISTANT, "Hi Ada."), (Role.USER, "What is my name?")]


async def test_two_simultaneous_runs_one_202_one_409(managed):
    engine = FakeEngine([Completion(tool_calls=[ToolCall("s1", "sleepy", '{"seconds": 1.5}')]), "done"])
    server, _ = managed(engine)
    agent = create(server, tools=["sleepy"])
    httpx.post(f"{server.url}{A}/{agent['id']}/messages", json={"content": "wait", "stream": False})
    async with httpx.AsyncClient(base_url=server.url) as client:
        answers = await asyncio.gather(*(client.post(f"{A}/{agent['id']}/run") for _ in range(2)))
    assert sorted(a.status_code for a in answers) == [202, 409]
    conflict = next(a for a in answers if a.status_code == 409).json()["error"]
    assert conflict["code"] == "agent_running"
    run_id = next(a for a in answers if a.status_code == 202).json()["run_id"]
    assert managed.kit.wait_run(server, agent["id"], run_id)["status"] == "succeeded"


def test_disconnect_mid_stream_keeps_the_partial_answer_and_cancels_the_run(managed):
    engine = FakeEngine([Completion(content="Let me check.", tool_calls=[ToolCall("s1", "sleepy", '{"seconds": 3}')])])
    server, _ = managed(engine)
    agent = create(server, tools=["sleepy"])
    with httpx.stream("POST", f"{server.url}{A}/{agent['id']}/messages", json={"content": "go", "stream": True}) as r:
        run_id = r.headers["x-jarvis-run-id"]
        for line in r.iter_lines():
            if line.startswith("event: tool_calls"):
                break  # the client goes away while the tool runs
    run = managed.kit.wait_run(server, agent["id"], run_id)
    assert run["status"] == "cancelled"
    stored = messages(server, agent["id"])
    assistant = [m for m in stored if m["role"] == "assistant"]
    assert len(assistant) == 1 and assistant[0]["status"] == "partial" and assistant[0]["content"] == "Let me check."
    assert [m["status"] for m in stored if m["role"] == "user"] == ["pending"]
    assert managed.kit.Sleepy.done.wait(10)  # let the abandoned tool thread end before the server's loop does


async def test_fifty_concurrent_streams_over_five_agents(managed):
    engine = FakeEngine(default=[StreamChunk(content="ok "), StreamChunk(content="done"), StreamChunk(finish_reason="stop")])
    server, _ = managed(engine)
    agents = [create(server, "plain")["id"] for _ in range(5)]

    async def one(client, i):
        agent_id = agents[i % 5]
        async with client.stream("POST", f"{A}/{agent_id}/messages", json={"content": f"q{i}", "stream": True}) as r:
            body = [line async for line in r.aiter_lines()]
        assert body[-2] == "data: [DONE]", body

    limits = httpx.Limits(max_connections=60)
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=60) as client:
        await asyncio.gather(*(one(client, i) for i in range(50)))
    rows = [m for agent_id in agents for m in messages(server, agent_id)]
    users = [m for m in rows if m["role"] == "user"]
    answers = [m for m in rows if m["role"] == "assistant"]
    assert len(users) == 50 and len(answers) == 50
    assert sorted(m["content"] for m in users) == sorted(f"q{i}" for i in range(50))
    assert all(m["status"] == "delivered" for m in users) and all(m["content"] == "ok done" for m in answers)
    assert len({m["id"] for m in rows}) == 100 and len({m["seq"] for m in rows}) == 100
    assert {m["run_id"] for m in users} == {m["run_id"] for m in answers}


@pytest.mark.parametrize("tool", ["sleepy", "inline_sleepy"])
def test_a_sleeping_tool_does_not_block_the_server(managed, tool):
    engine = FakeEngine([Completion(tool_calls=[ToolCall("s1", tool, '{"seconds": 2}')]), "rested"],
                        models=["fake-model"])
    server, _ = managed(engine)
    kit = managed.kit
    agent = create(server, tools=[tool])
    with httpx.stream("POST", f"{server.url}{A}/{agent['id']}/messages", json={"content": "rest", "stream": True}) as r:
        lines = r.iter_lines()
        for line in lines:
            if line.startswith("event: tool_calls"):
                break
        assert kit.Sleepy.started.wait(5)
        models = httpx.get(server.url + "/v1/models", timeout=5)
        assert models.status_code == 200 and models.json()["data"][0]["id"] == "fake-model"
        assert not kit.Sleepy.done.is_set()  # answered while the tool was still sleeping
        rest = list(lines)
    assert any(line.startswith("event: tool_result") for line in rest) and rest[-2] == "data: [DONE]"


@pytest.mark.parametrize(("approved", "ok"), [([], False), (["danger"], True)])
def test_tools_needing_confirmation_are_denied_unless_pre_approved(managed, approved, ok):
    engine = FakeEngine([Completion(tool_calls=[ToolCall("d1", "danger", "{}")]), "finished"])
    server, _ = managed(engine)
    agent = create(server, tools=["danger"], approved_tools=approved)
    with httpx.stream("POST", f"{server.url}{A}/{agent['id']}/messages", json={"content": "go", "stream": True}) as r:
        events = sse_events(managed, r)
    (result,) = [data for name, data in events if name == "tool_result"]
    assert result["ok"] is ok
    assert (result["output"] == "deleted") is ok


def test_stream_error_is_an_error_event_then_done(managed):
    engine = FakeEngine([[StreamChunk(content="par"), E.StreamError("the connection broke off")]])
    server, _ = managed(engine)
    agent = create(server, "plain")
    with httpx.stream("POST", f"{server.url}{A}/{agent['id']}/messages", json={"content": "x", "stream": True}) as r:
        events = sse_events(managed, r)
    assert events[-2][0] == "error" and "broke off" in events[-2][1]["error"]["message"]
    assert events[-1] == ("message", "[DONE]")
    assert not any(name == "message" and data != "[DONE]" and data["choices"][0]["finish_reason"] for name, data in events)
    assert [m["status"] for m in messages(server, agent["id"]) if m["role"] == "user"] == ["pending"]


def test_crud_validation_merge_and_archive(managed):
    server, _ = managed(FakeEngine([]))
    bad_type = httpx.post(server.url + A, json={"name": "x", "agent_type": "nope"})
    assert bad_type.status_code == 400 and bad_type.json()["error"]["param"] == "agent_type"
    assert "tool-user" in bad_type.json()["error"]["message"]
    bad_tool = httpx.post(server.url + A, json={"name": "x", "agent_type": "tool-user", "config": {"tools": ["nope"]}})
    assert bad_tool.status_code == 400 and bad_tool.json()["error"]["param"] == "config.tools"
    bad_option = httpx.post(server.url + A, json={"name": "x", "agent_type": "tool-user", "config": {"max_turns": "many"}})
    assert bad_option.status_code == 400
    tools_on_plain = httpx.post(server.url + A, json={"name": "x", "agent_type": "plain", "config": {"tools": ["add"]}})
    assert tools_on_plain.status_code == 400

    agent = create(server, temperature=0.5, max_turns=3, tools=["add"])
    patched = httpx.patch(f"{server.url}{A}/{agent['id']}", json={"config": {"temperature": 0.2}})
    assert patched.status_code == 200
    assert patched.json()["config"] == {"temperature": 0.2, "max_turns": 3, "tools": ["add"]}
    removed = httpx.patch(f"{server.url}{A}/{agent['id']}", json={"config": {"max_turns": None}, "name": "renamed"})
    assert removed.json()["config"] == {"temperature": 0.2, "tools": ["add"]} and removed.json()["name"] == "renamed"
    rejected = httpx.patch(f"{server.url}{A}/{agent['id']}", json={"agent_type": "nope"})
    assert rejected.status_code == 400
    assert httpx.get(f"{server.url}{A}/{agent['id']}").json()["agent_type"] == "tool-user"

    assert [a["id"] for a in httpx.get(server.url + A).json()["agents"]] == [agent["id"]]
    assert httpx.delete(f"{server.url}{A}/{agent['id']}").json() == {"id": agent["id"], "status": "archived"}
    assert httpx.get(server.url + A).json()["agents"] == []
    gone = httpx.post(f"{server.url}{A}/{agent['id']}/messages", json={"content": "hi"})
    assert gone.status_code == 409
    assert httpx.post(f"{server.url}{A}/{agent['id']}/run").status_code == 409
    assert httpx.get(f"{server.url}{A}/agent_missing").status_code == 404
    assert httpx.get(f"{server.url}{A}/{agent['id']}/runs/run_missing").status_code == 404


def _answer_by_input(call):
    """A scripted engine answer chosen by the conversation, so concurrent runs get their own answers."""
    last = call.messages[-1]
    if last.role is Role.TOOL:
        return "rested"
    if last.content == "slow":
        return Completion(tool_calls=[ToolCall("s1", "sleepy", '{"seconds": 1.5}')])
    return f"re: {last.content}"


def test_a_run_during_a_stream_leaves_the_streamed_message_to_its_stream(managed):
    engine = FakeEngine(default=_answer_by_input)
    server, _ = managed(engine)
    agent = create(server, tools=["sleepy"])
    url = f"{server.url}{A}/{agent['id']}"
    with httpx.stream("POST", url + "/messages", json={"content": "slow", "stream": True}) as r:
        stream_run = r.headers["x-jarvis-run-id"]
        lines = r.iter_lines()
        for line in lines:
            if line.startswith("event: tool_calls"):
                break
        assert managed.kit.Sleepy.started.wait(5)
        # The streamed message is its stream's: a /run now has nothing to answer.
        idle = httpx.post(url + "/run")
        assert idle.status_code == 409 and idle.json()["error"]["code"] == "nothing_pending", idle.text
        # A queued message is the run's, and only it.
        assert httpx.post(url + "/messages", json={"content": "queued", "stream": False}).status_code == 202
        run = httpx.post(url + "/run")
        assert run.status_code == 202 and run.json()["messages"] == 1
        assert managed.kit.wait_run(server, agent["id"], run.json()["run_id"])["status"] == "succeeded"
        rest = list(lines)
    assert rest[-2] == "data: [DONE]"
    assert managed.kit.wait_run(server, agent["id"], stream_run)["status"] == "succeeded"
    stored = messages(server, agent["id"])
    users = {m["content"]: m for m in stored if m["role"] == "user"}
    answers = {m["run_id"]: m["content"] for m in stored if m["role"] == "assistant"}
    assert answers == {stream_run: "rested", run.json()["run_id"]: "re: queued"}
    assert users["slow"]["status"] == "delivered" and users["slow"]["run_id"] == stream_run
    assert users["queued"]["status"] == "delivered" and users["queued"]["run_id"] == run.json()["run_id"]
    asked = [c.messages[-1].content for c in engine.calls if c.messages[-1].role is Role.USER]
    assert sorted(asked) == ["queued", "slow"]  # each user message reached the model once
    assert httpx.get(url).json()["status"] == "idle"
    assert httpx.post(url + "/run").json()["error"]["code"] == "nothing_pending"


def test_a_stream_during_a_run_answers_only_its_own_message(managed):
    engine = FakeEngine(default=_answer_by_input)
    server, _ = managed(engine)
    agent = create(server, tools=["sleepy"])
    url = f"{server.url}{A}/{agent['id']}"
    httpx.post(url + "/messages", json={"content": "slow", "stream": False})
    run = httpx.post(url + "/run")
    assert run.status_code == 202 and managed.kit.Sleepy.started.wait(5)
    with httpx.stream("POST", url + "/messages", json={"content": "meanwhile", "stream": True}) as r:
        assert r.status_code == 200
        streamed = "".join(data["choices"][0]["delta"].get("content") or "" for name, data in sse_events(managed, r)
                           if name == "message" and data != "[DONE]")
    assert streamed == "re: meanwhile"
    assert managed.kit.wait_run(server, agent["id"], run.json()["run_id"])["status"] == "succeeded"
    answers = sorted(m["content"] for m in messages(server, agent["id"]) if m["role"] == "assistant")
    assert answers == ["re: meanwhile", "rested"]


KEY = "sk-live-0123456789"


@pytest.mark.parametrize("stream", [False, True])
def test_an_unexpected_error_is_withheld_from_the_run_the_stream_and_the_log(managed, caplog, stream):
    engine = FakeEngine([RuntimeError(f"connect failed with key {KEY}")])
    server, _ = managed(engine)
    agent = create(server, "plain")
    url = f"{server.url}{A}/{agent['id']}"
    caplog.set_level("DEBUG", logger="jarvis_server")
    if stream:
        with httpx.stream("POST", url + "/messages", json={"content": "hi", "stream": True}) as r:
            run_id = r.headers["x-jarvis-run-id"]
            events = sse_events(managed, r)
        (error,) = [data["error"] for name, data in events if name == "error"]
        assert KEY not in error["message"] and "RuntimeError" in error["message"]
        # The run raised inside agent 'plain': the error names it, its plugin and distribution.
        assert error["code"] == "plugin_error" and "agent 'plain' (plugin 'test-agents'" in error["message"]
    else:
        httpx.post(url + "/messages", json={"content": "hi", "stream": False})
        run_id = httpx.post(url + "/run").json()["run_id"]
    run = managed.kit.wait_run(server, agent["id"], run_id)
    assert run["status"] == "failed"
    assert KEY not in run["error"] and "RuntimeError" in run["error"], run["error"]
    records = [r for r in caplog.records if r.name == "jarvis_server"]
    assert any(r.levelname == "ERROR" and "RuntimeError" in r.getMessage() for r in records), caplog.text
    assert any(r.levelname == "DEBUG" and "frames of that RuntimeError" in r.getMessage() for r in records)
    assert KEY not in caplog.text and "connect failed" not in caplog.text
    assert [m["status"] for m in messages(server, agent["id"])] == ["pending"]


def test_a_typed_error_keeps_its_message_on_the_run(managed):
    engine = FakeEngine([E.RateLimitError("slow down, please", retry_after=3)])
    server, _ = managed(engine)
    agent = create(server, "plain")
    url = f"{server.url}{A}/{agent['id']}"
    httpx.post(url + "/messages", json={"content": "hi", "stream": False})
    run = managed.kit.wait_run(server, agent["id"], httpx.post(url + "/run").json()["run_id"])
    assert run["error"] == "RateLimitError: slow down, please"
