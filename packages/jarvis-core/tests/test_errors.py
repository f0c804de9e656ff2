"""The error hierarchy: every class's attributes and message, the keyword pattern, pickling, and that the
module's tree lists every class."""

from __future__ import annotations

import inspect
import pickle

import pytest

from jarvis_core import errors as E
from jarvis_core.engine.http_errors import classify_http_error
from jarvis_core.engine.redaction import scrub_error

# The module's one warning (JarvisDeprecationWarning) is public too, and is not an error.
WARNINGS = [getattr(E, name) for name in E.__all__ if issubclass(getattr(E, name), Warning)]
CLASSES = [getattr(E, name) for name in E.__all__ if getattr(E, name) not in WARNINGS]


def test_every_public_name_is_an_error_in_the_tree():
    tree = (E.__doc__ or "").split("::", 1)[1].lstrip("\n").split("\n\n", 1)[0]  # the indented block
    named = {line.lstrip(" │├└─").split(" ", 1)[0] for line in tree.splitlines() if line.strip()}
    for cls in CLASSES:
        assert issubclass(cls, E.JarvisError)
        assert cls.__name__ in named, f"{cls.__name__} is missing from the tree in errors.py"
    assert WARNINGS == [E.JarvisDeprecationWarning] and issubclass(E.JarvisDeprecationWarning, DeprecationWarning)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_class_documents_its_constructor_and_survives_pickling(cls):
    init = cls.__init__
    assert init is not Exception.__init__ or cls is E.JarvisError
    assert cls.__doc__ and len(cls.__doc__) > 20
    params = [p for p in inspect.signature(init).parameters.values() if p.name != "self"]
    # The pattern: the message first (or the facts that make it), every further fact keyword-only.
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
    samples = {
        E.UnknownNameError: lambda: E.UnknownNameError("engine", "x", ["a"]),
        E.InvalidOptionError: lambda: E.InvalidOptionError("e", ["x"], ["a"]),
        E.InvalidOptionValueError: lambda: E.InvalidOptionValueError("e", "x", "expected y", value=3),
        E.ConflictingOptionsError: lambda: E.ConflictingOptionsError("e", ["x", "y"], "pick one"),
    }
    exc = samples.get(cls, lambda: cls("boom"))()
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls and str(back) == str(exc) and back.__dict__ == exc.__dict__


def test_usage_error():
    err = E.UsageError("--timeout must be a positive number of seconds", argument="--timeout")
    assert isinstance(err, ValueError) and err.argument == "--timeout"
    assert str(err) == "--timeout must be a positive number of seconds"
    assert E.UsageError("x").argument == ""


def test_plugin_errors_name_the_plugin():
    err = E.PluginError("broken", key="acme", plugin="acme", distribution="jarvis-engine-acme")
    assert (err.key, err.plugin, err.distribution, str(err)) == ("acme", "acme", "jarvis-engine-acme", "broken")
    load = E.PluginLoadError("failed", plugin="p", distribution="d")
    assert (load.plugin, load.distribution, load.key) == ("p", "d", "")
    dup = E.DuplicateRegistrationError("clash", key="acme", distributions=["a", "b"])
    assert dup.distributions == ("a", "b") and dup.key == "acme"
    unknown = E.UnknownNameError("engine", "nope", ["b", "a"])
    assert unknown.available == ("a", "b") and unknown.key == "nope" and isinstance(unknown, LookupError)
    assert str(unknown) == "unknown engine 'nope'; available: a, b"


def test_option_errors_are_invalid_option_errors_naming_the_option():
    bad = E.InvalidOptionValueError("ollama", "num_ctx", "expected a positive number of tokens", value=-1)
    assert isinstance(bad, E.InvalidOptionError) and isinstance(bad, ValueError)
    assert (bad.engine_id, bad.option, bad.names, bad.value, bad.allowed) == ("ollama", "num_ctx", ("num_ctx",), -1, ())
    assert str(bad) == "ollama: option 'num_ctx' = -1 is invalid: expected a positive number of tokens"
    quiet = E.InvalidOptionValueError("cloud (google)", "thinking", "give Gemini's thinkingConfig object")
    assert quiet.value is None and str(quiet) == (
        "cloud (google): option 'thinking' is invalid: give Gemini's thinkingConfig object")
    long = E.InvalidOptionValueError("e", "stop", "too long", value="x" * 1000)
    assert len(str(long)) < 130 and "x…" in str(long) and long.value == "x" * 1000  # only the message is cut

    both = E.ConflictingOptionsError("vllm", ["response_format", "tool_mode"], "drop response_format")
    assert isinstance(both, E.InvalidOptionError) and both.names == ("response_format", "tool_mode")
    assert str(both) == "vllm: options 'response_format' and 'tool_mode' cannot be used together: drop response_format"
    assert both.why == "drop response_format"

    plain = E.InvalidOptionError("ollama", ["bogus"], ["b", "a"])
    assert str(plain) == "engine 'ollama' does not accept option(s) 'bogus'; allowed: a, b"


def test_engine_errors_and_their_facts():
    conn = E.EngineConnectionError("cannot reach", engine_id="ollama", url="http://h:1/api/chat")
    assert (conn.engine_id, conn.url) == ("ollama", "http://h:1/api/chat")
    slow = E.EngineTimeoutError("timed out", engine_id="vllm", url="http://h/v1", timeout=2.5, phase="read")
    assert isinstance(slow, E.EngineConnectionError)
    assert (slow.engine_id, slow.url, slow.timeout, slow.phase) == ("vllm", "http://h/v1", 2.5, "read")
    bad = E.MalformedResponseError("not JSON", engine_id="llamacpp", excerpt="<html>" + "x" * 1000)
    assert isinstance(bad, E.EngineError) and not isinstance(bad, E.StreamError)
    assert bad.excerpt.startswith("<html>") and len(bad.excerpt) == E.EXCERPT_CHARS
    gone = E.ModelNotFoundError("no model", model="m", engine_id="e", status_code=404, body="b")
    assert (gone.model, gone.status_code, gone.body, gone.retry_after) == ("m", 404, "b", None)
    cut = E.LimitExceededError("too long", engine_id="e", limit="line")
    assert isinstance(cut, E.StreamError) and cut.limit == "line"


@pytest.mark.parametrize("cls", [c for c in CLASSES if issubclass(c, E.EngineHTTPError)], ids=lambda c: c.__name__)
def test_retry_after_is_on_every_http_error(cls):
    err = cls("busy", engine_id="e", status_code=503, body="later", retry_after=7.0)
    assert (err.retry_after, err.status_code, err.body, err.engine_id) == (7.0, 503, "later", "e")


def test_classification_keeps_retry_after_on_a_503():
    err = classify_http_error(503, {"error": "overloaded"}, engine_id="e", retry_after=4.0)
    assert type(err) is E.ServerError and err.retry_after == 4.0
    limited = classify_http_error(429, "slow down", engine_id="e", retry_after=2.0)
    assert type(limited) is E.RateLimitError and limited.retry_after == 2.0
    missing = classify_http_error(404, {"error": "model 'qwen' not found"}, engine_id="e", model="qwen")
    assert type(missing) is E.ModelNotFoundError and missing.model == "qwen"


def test_secrets_are_scrubbed_from_the_excerpt():
    err = E.MalformedResponseError("bad reply sk-SECRET-1", excerpt="echo: sk-SECRET-1")
    scrub_error(err, ["sk-SECRET-1"])
    assert "sk-SECRET-1" not in str(err) and "sk-SECRET-1" not in err.excerpt
