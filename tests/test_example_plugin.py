"""The worked example of docs/plugins.md, ``examples/jarvis-engine-echo``, installed for real and used through
the CLI: listing, ``ask`` (streamed and ``--json``), its ``[engine.echo]`` config table, and ``chat``."""

from __future__ import annotations

import json
import pathlib
import signal
import subprocess
import time

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def echo_venv(plugin_venv, example_echo_project):
    return plugin_venv("echo", [example_echo_project])


def test_listed_with_its_registrations(echo_venv):
    proc = echo_venv.jarvis("plugins", "--hook", "jarvis_register_config_sections", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    echo = next(p for p in doc["plugins"] if p["name"] == "engine-echo")
    assert echo["module"] == "jarvis_engine_echo.plugin"
    assert echo["registered"]["config_section"] == [
        {"key": "engine.echo", "target": "jarvis_engine_echo.config:EchoConfig"}
    ]
    # --hook keeps only the plugins implementing that hook: the core's built-ins implement others.
    assert all("jarvis_register_config_sections" in p["hooks"] for p in doc["plugins"])


def test_ask_streams_the_echo(echo_venv):
    proc = echo_venv.jarvis("ask", "--engine", "echo", "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hi\n"
    # The model was not given: the one picked is announced, on stderr only.
    assert proc.stderr.strip() == "jarvis: model echo-1 (the first offered by echo; choose with --model)"


def test_ask_json_reports_usage_and_finish_reason(echo_venv):
    proc = echo_venv.jarvis("ask", "--engine", "echo", "--model", "echo-1", "--max-tokens", "2", "--json",
                            "one two three")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["content"] == "one two"
    assert doc["finish_reason"] == "length"
    assert doc["engine"] == "echo" and doc["model"] == "echo-1"
    assert doc["usage"]["completion_tokens"] == 2
    assert proc.stderr == ""


def test_config_table_reaches_the_engine(echo_venv, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[engine]\ndefault = "echo"\n\n[engine.echo]\nprefix = "echo:"\n', encoding="utf-8")
    proc = echo_venv.jarvis("ask", "--model", "echo-1", "hello", env={"JARVIS_CONFIG": str(config)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "echo:hello\n"


def test_config_table_is_checked_against_the_plugin_schema(echo_venv, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[engine]\ndefault = "echo"\n\n[engine.echo]\nprefx = "x"\n', encoding="utf-8")
    proc = echo_venv.jarvis("ask", "--model", "echo-1", "hello", env={"JARVIS_CONFIG": str(config)})
    assert proc.returncode == 1
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith("jarvis: error: ")
    assert "prefx" in line and str(config) in line and "prefix" in line  # the key, the file, the suggestion


def test_chat_answers_each_line_with_one_engine(echo_venv):
    proc = echo_venv.jarvis("chat", "--engine", "echo", "--model", "echo-1", input="first line\n\nsecond\n/exit\nnot read\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "first line\nsecond\n"


def test_unknown_engine_lists_the_installed_ones(echo_venv):
    proc = echo_venv.jarvis("ask", "--engine", "ecko", "hi")
    assert proc.returncode == 1
    line = proc.stderr.strip()
    assert line.startswith("jarvis: error: unknown engine 'ecko'; available: ") and "echo" in line


def _wait_until_reading_stdin(pid: int) -> None:
    """Block until the process's main thread sleeps in a pipe read (Linux ``/proc``), so that a signal sent
    next lands at the prompt and not while the previous answer is still being finished."""
    wchan = pathlib.Path(f"/proc/{pid}/wchan")
    deadline = time.monotonic() + 60
    while "pipe_read" not in wchan.read_text():
        assert time.monotonic() < deadline, "the chat never went back to reading stdin"
        time.sleep(0.01)


@pytest.mark.skipif(not pathlib.Path("/proc/self/wchan").exists(), reason="needs Linux /proc to see the prompt wait")
def test_ctrl_c_at_the_prompt_exits_130_without_a_traceback(echo_venv):
    proc = subprocess.Popen(
        [str(echo_venv.python), "-m", "jarvis_core.cli.main", "chat", "--engine", "echo", "--model", "echo-1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=echo_venv.env(),
    )
    try:
        proc.stdin.write("ready?\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "ready?\n"
        _wait_until_reading_stdin(proc.pid)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
