"""One override point and one mask: a planted key shows as ``MASK`` wherever jarvis could show it.

The engine says which keys it holds (``secret_values``); every channel masks them the same way: its
``redact`` and ``scrub``, the events of ``InstrumentedEngine``, the log filter, ``Secret`` reprs, ``jarvis
config show`` and the config's repr. The cross-package twin (every shipped engine, over real loopback
servers) is tests/test_planted_key_all_engines.py.
"""

from __future__ import annotations

import logging

import pytest

from jarvis_core.config import load_config
from jarvis_core.config.render import config_to_dict
from jarvis_core.engine.http import HTTPEngine
from jarvis_core.engine.redaction import MASK, Secret, protect_logs, scrub_text
from jarvis_core.errors import EngineHTTPError
from jarvis_core.events import EventBus
from jarvis_core.instrumented import InstrumentedEngine
from jarvis_core.testing import FakeEngine

KEY = "sk-PLANTED-0a1b2c3d4e5f"
SAID = f"rejected key {KEY} (Bearer {KEY})"
MASKED = SAID.replace(KEY, MASK)


class Keyed(HTTPEngine):
    engine_id = "keyed"

    def generate(self, messages, *, model, temperature=None, max_tokens=1024, tools=None, **options):
        raise EngineHTTPError(SAID, engine_id=self.engine_id, body=SAID)

    def list_models(self):
        return []


class TwoKeys(FakeEngine):
    """A non-HTTP engine holding two keys: it says so in its one override point."""

    def secret_values(self):
        return (KEY, Secret("sk-SECOND-9f8e7d6c5b4a"))


def test_the_engine_override_point_feeds_every_channel():
    engine = Keyed(host="http://127.0.0.1:9", api_key=KEY)
    assert engine.secret_values() == (KEY,)
    assert engine.redact(SAID) == MASKED
    assert engine.redact({"error": {"message": SAID}}) == {"error": {"message": MASKED}}
    err = engine.scrub(EngineHTTPError(SAID, engine_id="keyed", body=SAID))
    assert str(err) == MASKED and err.body == MASKED

    events = []
    bus = EventBus()
    bus.subscribe(events.append)
    wrapped = InstrumentedEngine(engine, bus)
    assert wrapped.secret_values() == (KEY,) and wrapped.redact(SAID) == MASKED
    with pytest.raises(EngineHTTPError):
        wrapped.generate([{"role": "user", "content": "hi"}], model="m")
    assert events[-1].data["error"] == MASKED


def test_an_engine_with_several_keys_masks_them_all():
    engine = TwoKeys(["x"])
    text = f"{KEY} and sk-SECOND-9f8e7d6c5b4a"
    assert engine.redact(text) == f"{MASK} and {MASK}"
    assert InstrumentedEngine(engine, EventBus()).redact(text) == f"{MASK} and {MASK}"


def test_logs_secrets_and_the_config_use_the_same_mask(tmp_path, caplog):
    assert repr(Secret(KEY)) == f"Secret({MASK!r})" and str(Secret(KEY)) == repr(Secret(KEY))
    assert scrub_text(SAID, [Secret(KEY)]) == MASKED

    protect_logs([KEY])
    with caplog.at_level(logging.DEBUG, logger="jarvis_core"):
        logging.getLogger("jarvis_core").debug("server said %s", SAID)
    assert caplog.records[-1].getMessage() == f"server said {MASKED}"

    path = tmp_path / "config.toml"
    path.write_text(f'[engine.vllm]\nhost = "http://gpu:8000"\napi_key = "{KEY}"\n', encoding="utf-8")
    config = load_config(path)
    assert config_to_dict(config)["engine"]["vllm"]["api_key"] == MASK
    assert KEY not in repr(config) and f"api_key={MASK}" in repr(config)
