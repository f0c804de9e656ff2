"""The front door: bearer token, Host allow-list, refusing to start unprotected. Real uvicorn servers on
loopback; ``jarvis serve`` as a real process for the start-up refusals."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import openai
import pytest

from jarvis_core.errors import ConfigError
from jarvis_core.testing import FakeEngine
from jarvis_server.app import verify_front_door
from jarvis_server.security import SecurityLayer, allowed_hosts_for, check_bind, check_token

TOKEN = "s3cret-token-0123456789abcdef"
ASK = [{"role": "user", "content": "hi"}]


def _jarvis(*args: str, env: dict | None = None, tmp_path=None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_")}
    base.update({"JARVIS_HOME": str(tmp_path), **(env or {})})
    return subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", *args], capture_output=True, text=True,
                          env=base, timeout=60)


def test_missing_or_wrong_bearer_is_401_and_the_right_one_passes(serve):
    server = serve(FakeEngine(["hello"]), token=TOKEN.encode())
    for key in ("wrong-token-0123456789abcdef", TOKEN[:-1], TOKEN + "x"):
        with pytest.raises(openai.AuthenticationError) as info:
            openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0).models.list()
        assert info.value.status_code == 401 and TOKEN not in info.value.response.text
    missing = httpx.get(server.url + "/v1/models")
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["error"]["code"] == "invalid_api_key"
    basic = httpx.get(server.url + "/v1/models", headers={"Authorization": f"Basic {TOKEN}"})
    assert basic.status_code == 401
    post = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": ASK})
    assert post.status_code == 401
    good = openai.OpenAI(base_url=server.url + "/v1", api_key=TOKEN, max_retries=0)
    assert good.chat.completions.create(model="fake-model", messages=ASK).choices[0].message.content == "hello"
    assert httpx.get(server.url + "/health").status_code == 200  # liveness needs no secret


@pytest.mark.parametrize("token", [None, TOKEN.encode()])
def test_foreign_host_header_is_400_even_on_loopback(serve, token):
    engine = FakeEngine([])
    server = serve(engine, token=token)
    headers = {"Host": "evil.example"}
    if token:
        headers["Authorization"] = f"Bearer {TOKEN}"
    for path in ("/v1/models", "/health"):
        r = httpx.get(server.url + path, headers=headers)
        assert r.status_code == 400 and r.json()["error"]["code"] == "host_not_allowed"
    r = httpx.post(server.url + "/v1/chat/completions", headers=headers, json={"model": "m", "messages": ASK})
    assert r.status_code == 400 and engine.calls == []
    assert httpx.get(server.url + "/health", headers={"Host": f"localhost:{server.port}"}).status_code == 200


def test_allowed_names():
    assert allowed_hosts_for("127.0.0.1") == {"127.0.0.1", "localhost", "::1"}
    assert "box.lan" in allowed_hosts_for("0.0.0.0", ["Box.LAN"]) and "0.0.0.0" not in allowed_hosts_for("0.0.0.0")
    assert "10.0.0.5" in allowed_hosts_for("10.0.0.5")


def test_token_rules_never_echo_the_token():
    assert check_token(None) is None and check_token("") is None
    with pytest.raises(ConfigError) as info:
        check_token("short secret")
    assert "short secret" not in str(info.value)
    with pytest.raises(ConfigError):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", check_token(TOKEN))
    check_bind("::1", None)
    assert TOKEN not in repr(SecurityLayer(lambda *a: None, token=TOKEN.encode(), allowed_hosts=frozenset({"x"})))


async def test_startup_fails_when_the_layer_is_missing_or_open():
    async def bare_app(scope, receive, send):  # an app with no security layer in front
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    with pytest.raises(ConfigError, match="security layer is not installed"):
        await verify_front_door(bare_app)
    with pytest.raises(ConfigError, match="Host allow-list is off and no token"):
        await verify_front_door(SecurityLayer(bare_app, token=None, allowed_hosts=frozenset({"*"})))
    await verify_front_door(SecurityLayer(bare_app, token=TOKEN.encode(), allowed_hosts=frozenset({"*"})))
    await verify_front_door(SecurityLayer(bare_app, token=TOKEN.encode(), allowed_hosts=frozenset({"localhost"})))


def test_serve_refuses_a_public_bind_without_a_token(tmp_path):
    proc = _jarvis("serve", "--host", "0.0.0.0", "--port", "0", tmp_path=tmp_path)
    assert proc.returncode == 1
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("jarvis: error:") and "without a token" in line and "JARVIS_SERVER_TOKEN" in line


def test_serve_refuses_a_weak_token_without_printing_it(tmp_path):
    proc = _jarvis("serve", "--host", "0.0.0.0", env={"JARVIS_SERVER_TOKEN": "hunter2"}, tmp_path=tmp_path)
    assert proc.returncode == 1 and "at least 16" in proc.stderr and "hunter2" not in proc.stderr
