"""Discovery against real loopback servers: in-process engine plugins built on HTTPEngine.

The "black hole" is a listening socket that never accepts: connections complete (the kernel queues them)
but no byte ever comes back, so every health check runs into its timeout. Whether the checks overlap is
proven by the order of events (every check started before any finished), not by measuring time.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from jarvis_core.config import load_config
from jarvis_core.discovery import (
    ModelListing,
    candidate_keys,
    discover_engines,
    discover_models,
    get_engine,
    probe_engines,
)
from jarvis_core.engine.base import InferenceEngine
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.errors import ConfigError, EngineHTTPError, UnknownNameError
from jarvis_core.testing import installed_registry, simple_plugin

# -- servers ---------------------------------------------------------------------------------------------


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A loopback address that accepts TCP connections and never answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


class _Handler(BaseHTTPRequestHandler):
    models: List[str] = []
    models_status = 200

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, {"status": "ok"})
        elif self.path == "/v1/models":
            body = {"data": [{"id": m} for m in self.models]} if self.models_status == 200 else {"error": "boom"}
            self._send(self.models_status, body)
        else:
            self._send(404, {"error": "not found"})

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(models, status=200) -> url`` starts a loopback server with /health and /v1/models."""
    servers: List[ThreadingHTTPServer] = []

    def start(models: List[str], status: int = 200) -> str:
        handler = type("Handler", (_Handler,), {"models": list(models), "models_status": status})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# -- in-process engine plugins ---------------------------------------------------------------------------


class Journal:
    """What the test engines did, in order, across threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: List[Tuple[str, str]] = []

    def add(self, what: str, key: str) -> None:
        with self.lock:
            self.events.append((what, key))

    def of(self, what: str) -> List[str]:
        with self.lock:
            return [k for w, k in self.events if w == what]


JOURNAL = Journal()


class LoopbackEngine(HTTPEngine):
    """A minimal real engine: health on /health, models from /v1/models, journaled."""

    health_path = "/health"

    def generate(self, messages, *, model, temperature=None, max_tokens=1024, tools=None, **options):
        raise NotImplementedError

    def list_models(self) -> List[str]:
        return [m["id"] for m in self.request_json("GET", "/v1/models")["data"]]

    def health(self) -> bool:
        JOURNAL.add("start", self.engine_id)
        try:
            return super().health()
        finally:
            JOURNAL.add("end", self.engine_id)

    def close(self) -> None:
        JOURNAL.add("close", self.engine_id)
        super().close()


def engine_class(key: str) -> type:
    return type(f"Engine_{key}", (LoopbackEngine,), {"engine_id": key})


class StuckEngine(InferenceEngine):
    """An engine whose health check ignores its timeout until released."""

    engine_id = "stuck"
    health_timeout = 0.2
    release = threading.Event()
    closed = threading.Event()

    def generate(self, *a, **k):
        raise NotImplementedError

    def list_models(self) -> List[str]:
        return []

    def health(self) -> bool:
        self.release.wait(30)
        return True

    def close(self) -> None:
        self.closed.set()


def _plugin(keys: List[str], *, hidden: Tuple[str, ...] = (), broken: Tuple[str, ...] = ()) -> Any:
    from jarvis_core import hookimpl

    class Plugin:
        jarvis_plugin_name = "loopback"

        @staticmethod
        @hookimpl
        def jarvis_register_engines(register):
            for key in keys:
                register(key, engine_class(key), description=f"test engine {key}")
            for key in hidden:
                register(key, engine_class(key), discoverable=False)
            for key in broken:
                register(key, "jarvis_test_no_such_module:Engine")

    return Plugin()


@pytest.fixture(autouse=True)
def _fresh_journal():
    with JOURNAL.lock:
        JOURNAL.events.clear()
    yield


def _config(tmp_path: Path, text: str, environ: Dict[str, str] | None = None):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ=environ or {})


# -- get_engine ------------------------------------------------------------------------------------------


def test_get_engine_builds_the_default_from_its_section(tmp_path, serve):
    url = serve(["m1"])
    with installed_registry(_plugin(["alpha", "beta"])):
        config = _config(tmp_path, f'[engine]\ndefault = "alpha"\n[engine.alpha]\nhost = "{url}"\ntimeout = 7\n')
        with get_engine(config) as engine:
            assert engine.engine_id == "alpha"
            assert engine.base_url == url
            assert engine.timeout == 7.0
            assert engine.list_models() == ["m1"]


def test_get_engine_overrides_beat_config_and_env(tmp_path):
    with installed_registry(_plugin(["alpha"])):
        config = _config(tmp_path, '[engine.alpha]\nhost = "http://file:1"\n', {"ALPHA_HOST": "http://env:2"})
        assert get_engine(config, "alpha").base_url == "http://env:2"
        assert get_engine(config, "alpha", host="http://cli:3").base_url == "http://cli:3"
        assert get_engine(config, "alpha", host=None).base_url == "http://env:2"  # None = not given


def test_get_engine_without_default_says_what_to_do(tmp_path):
    with installed_registry(_plugin(["alpha", "beta"])):
        config = _config(tmp_path, "")
        with pytest.raises(ConfigError) as info:
            get_engine(config)
    message = str(info.value)
    assert "--engine" in message and "[engine] default" in message and "JARVIS_ENGINE" in message
    assert "alpha, beta" in message


def test_get_engine_unknown_key_lists_installed(tmp_path):
    with installed_registry(_plugin(["alpha", "beta"])):
        config = _config(tmp_path, '[engine]\ndefault = "gamma"\n')
        with pytest.raises(UnknownNameError, match="alpha, beta"):
            get_engine(config)


# -- discover_engines ------------------------------------------------------------------------------------


def test_health_checks_of_unreachable_engines_overlap(tmp_path, black_hole):
    keys = ["e1", "e2", "e3", "e4", "e5"]
    with installed_registry(_plugin(keys)):
        sections = "".join(f'[engine.{k}]\nhost = "{black_hole}"\n' for k in keys)
        config = _config(tmp_path, sections)
        found = discover_engines(config, timeout=0.5)
    assert found == []
    starts, ends = JOURNAL.of("start"), JOURNAL.of("end")
    assert sorted(starts) == keys and sorted(ends) == keys
    # Parallel, not sequential: every check had started before the first one finished, so the whole
    # discovery took about one health timeout rather than five.
    first_end = next(i for i, (what, _) in enumerate(JOURNAL.events) if what == "end")
    assert [w for w, _ in JOURNAL.events[:first_end]].count("start") == len(keys)
    assert sorted(JOURNAL.of("close")) == keys  # unhealthy engines are closed


def test_default_first_then_configured_then_alphabetical_and_unused_closed(tmp_path, serve, black_hole):
    up = serve(["m"])
    with installed_registry(_plugin(["zeta", "alpha", "mid", "down"])):
        config = _config(
            tmp_path,
            f'[engine]\ndefault = "mid"\n'
            f'[engine.zeta]\nhost = "{up}"\n[engine.mid]\nhost = "{up}"\n[engine.down]\nhost = "{black_hole}"\n'
            f'[engine.alpha]\nhost = "{up}"\n',
        )
        found = discover_engines(config, timeout=0.5)
    try:
        assert [k for k, _ in found] == ["mid", "zeta", "alpha"]
        assert JOURNAL.of("close") == ["down"]
    finally:
        for _, engine in found:
            engine.close()


def test_unconfigured_installed_engines_are_probed_alphabetically(tmp_path, serve, monkeypatch):
    up = serve([])
    with installed_registry(_plugin(["bravo", "alpha"])):
        config = _config(tmp_path, "", {"ALPHA_HOST": up, "BRAVO_HOST": up})
        assert candidate_keys(config) == ["alpha", "bravo"]
        found = discover_engines(config)
    assert [k for k, _ in found] == ["alpha", "bravo"]
    for _, engine in found:
        engine.close()


def test_non_discoverable_engines_are_skipped_unless_configured(tmp_path, serve):
    up = serve([])
    with installed_registry(_plugin(["open"], hidden=("private",))):
        config = _config(tmp_path, "", {"OPEN_HOST": up, "PRIVATE_HOST": up})
        assert candidate_keys(config) == ["open"]
        configured = _config(tmp_path, f'[engine.private]\nhost = "{up}"\n', {"OPEN_HOST": up})
        assert candidate_keys(configured) == ["private", "open"]
        found = discover_engines(configured)
    assert [k for k, _ in found] == ["private", "open"]
    for _, engine in found:
        engine.close()


def test_engine_that_cannot_be_built_is_reported_not_raised(tmp_path, serve):
    up = serve([])
    with installed_registry(_plugin(["good"], broken=("broken",))):
        config = _config(tmp_path, f'[engine.broken]\nhost = "{up}"\n[engine.good]\nhost = "{up}"\n')
        statuses = probe_engines(config)
        with pytest.warns(RuntimeWarning, match=r"engine 'broken' \(plugin .*\) could not be imported") as caught:
            found = discover_engines(config)
    by_key = {s.key: (s, e) for s, e in statuses}
    broken_status, broken_engine = by_key["broken"]
    assert broken_engine is None and not broken_status.healthy
    assert "jarvis_test_no_such_module" in broken_status.error
    assert by_key["good"][0].healthy and by_key["good"][0].error is None
    by_key["good"][1].close()
    assert [k for k, _ in found] == ["good"]
    assert len(caught) == 1
    # The error already names the engine: the warning does not say "engine 'broken'" twice.
    assert str(caught[0].message) == (
        "engine 'broken' (plugin 'loopback', loopback) could not be imported from 'jarvis_test_no_such_module:Engine': "
        "ModuleNotFoundError: No module named 'jarvis_test_no_such_module'; report it to the plugin's authors, or "
        "disable it with JARVIS_DISABLE_PLUGINS=loopback"
    )
    found[0][1].close()


def test_probe_status_carries_host_and_flags_but_no_secret(tmp_path, black_hole):
    with installed_registry(_plugin(["alpha"])):
        config = _config(
            tmp_path, f'[engine]\ndefault = "alpha"\n[engine.alpha]\nhost = "{black_hole}"\napi_key = "sk-hidden"\n'
        )
        [(status, engine)] = probe_engines(config, keys=["alpha"], timeout=0.3)
    engine.close()
    doc = status.to_dict()
    assert doc["host"] == black_hole and doc["default"] and doc["configured"] and not doc["healthy"]
    assert doc["error"] == f"not answering at {black_hole}"
    assert "sk-hidden" not in json.dumps(doc)


def test_a_health_check_that_outlives_the_deadline_is_abandoned_and_closed_later(tmp_path):
    StuckEngine.release.clear()
    StuckEngine.closed.clear()
    with installed_registry(simple_plugin("stuck", engines={"stuck": StuckEngine})):
        config = _config(tmp_path, "")
        [(status, engine)] = probe_engines(config, keys=["stuck"])
    assert engine is None and not status.healthy
    assert status.error.startswith("no answer within")
    assert not StuckEngine.closed.is_set()
    StuckEngine.release.set()
    assert StuckEngine.closed.wait(10)  # its thread closes it once the check returns


# -- discover_models -------------------------------------------------------------------------------------


def test_discover_models_lists_in_parallel_and_reports_errors(tmp_path, serve):
    good, bad = serve(["qwen3:8b", "llama3.2:3b"]), serve([], status=500)
    with installed_registry(_plugin(["good", "bad"])):
        config = _config(tmp_path, f'[engine.good]\nhost = "{good}"\n[engine.bad]\nhost = "{bad}"\n')
        engines = discover_engines(config)
        assert [k for k, _ in engines] == ["good", "bad"]  # both answer /health
        listing = discover_models(engines)
    for _, engine in engines:
        engine.close()
    assert isinstance(listing, ModelListing) and isinstance(listing, dict)
    assert listing == {"good": ["qwen3:8b", "llama3.2:3b"]}
    assert set(listing.errors) == {"bad"}
    assert isinstance(listing.errors["bad"], EngineHTTPError)
    assert str(listing.errors["bad"]) == "bad: server error (HTTP 500): boom"  # the engine names itself


def test_discover_models_deadline_turns_a_stuck_engine_into_an_error():
    class SlowModels(StuckEngine):
        engine_id = "slow"
        gate = threading.Event()

        def list_models(self) -> List[str]:
            self.gate.wait(30)
            return ["late"]

    engine = SlowModels()
    try:
        listing = discover_models([("slow", engine)], timeout=0.2)
    finally:
        SlowModels.gate.set()
    assert dict(listing) == {}
    assert "took longer than 0.2s" in str(listing.errors["slow"])


# -- the commands ----------------------------------------------------------------------------------------


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path))
    for var in ("JARVIS_CONFIG", "JARVIS_ENGINE", "UP_HOST", "DOWN_HOST", "BAD_HOST"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_jarvis_engines_prints_each_engine_health_as_json(cli_env, serve, black_hole, capsys):
    from jarvis_core.cli.main import main

    up = serve(["m"])
    (cli_env / "config.toml").write_text(
        f'[engine]\ndefault = "down"\n[engine.down]\nhost = "{black_hole}"\napi_key = "sk-never-shown"\n'
        f'[engine.up]\nhost = "{up}"\n',
        encoding="utf-8",
    )
    with installed_registry(_plugin(["up", "down"], hidden=("private",))):
        assert main(["engines", "--timeout", "0.3", "--json"]) == 0
    out = capsys.readouterr().out
    assert "sk-never-shown" not in out
    doc = json.loads(out)
    assert doc["default"] == "down"
    rows = {row["key"]: row for row in doc["engines"]}
    assert [row["key"] for row in doc["engines"]] == ["down", "up"]  # private is not discoverable
    assert rows["up"]["healthy"] is True and rows["up"]["host"] == up and rows["up"]["error"] is None
    assert rows["down"]["healthy"] is False and rows["down"]["default"] is True
    assert sorted(JOURNAL.of("close")) == ["down", "up"]  # the command closes everything it built


def test_jarvis_engines_table_says_up_or_down_and_why(cli_env, serve, black_hole, capsys):
    from jarvis_core.cli.main import main

    up = serve(["m"])
    config = cli_env / "config.toml"
    config.write_text(
        f'[engine]\ndefault = "up"\n[engine.down]\nhost = "{black_hole}"\napi_key = "sk-never-shown"\n'
        f'[engine.up]\nhost = "{up}"\n',
        encoding="utf-8",
    )
    with installed_registry(_plugin(["up", "down"], hidden=("private",))):
        assert main(["engines", "--timeout", "0.3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "sk-never-shown" not in "\n".join(lines)
    assert lines[0].split() == ["ENGINE", "STATUS", "HOST", "NOTE"]
    note = lines[0].index("NOTE")
    assert [(line[:note].split(), line[note:]) for line in lines[1:3]] == [
        (["up", "up", up], "default; test engine up"),
        # The host is in its own column: the note does not repeat it.
        (["down", "down", black_hole], "not answering"),
    ]
    assert lines[3:] == ["", f"config: {config}; default engine: up"]


def test_jarvis_engines_unknown_name_lists_the_installed(cli_env, capsys):
    from jarvis_core.cli.main import main

    with installed_registry(_plugin(["up", "down"])):
        assert main(["engines", "nope"]) == 1
    assert "unknown engine 'nope'; available: down, up" in capsys.readouterr().err


def test_jarvis_models_lists_models_and_errors(cli_env, serve, capsys):
    from jarvis_core.cli.main import main

    up, bad = serve(["qwen3:8b"]), serve([], status=500)
    (cli_env / "config.toml").write_text(
        f'[engine.up]\nhost = "{up}"\n[engine.bad]\nhost = "{bad}"\n', encoding="utf-8"
    )
    with installed_registry(_plugin(["up", "bad"])):
        assert main(["models", "--json"]) == 0
        captured = capsys.readouterr()
        doc = json.loads(captured.out)
        assert doc["models"] == {"up": ["qwen3:8b"]}
        assert set(doc["errors"]) == {"bad"}
        assert captured.err == "jarvis: warning: bad: server error (HTTP 500): boom\n"  # the key once, not "bad: bad:"
        assert main(["models"]) == 0
        captured = capsys.readouterr()
        assert captured.out == "ENGINE  MODEL\nup      qwen3:8b\n"
        assert captured.err == "jarvis: warning: bad: server error (HTTP 500): boom\n"  # the key once, not "bad: bad:"
        assert main(["models", "--engine", "up", "--indent", "0"]) == 0
        assert capsys.readouterr().out == '{"models": {"up": ["qwen3:8b"]}, "errors": {}}\n'
        assert main(["models", "--engine", "bad"]) == 1
        assert capsys.readouterr().err.startswith("jarvis: error:")


def test_jarvis_models_with_nothing_reachable_fails_with_advice(cli_env, capsys):
    from jarvis_core.cli.main import main

    with installed_registry(_plugin([])):
        assert main(["models"]) == 1
    assert "no engine is reachable" in capsys.readouterr().err
