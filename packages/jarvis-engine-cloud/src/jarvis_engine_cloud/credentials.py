"""API keys and base URLs of the three providers, and keeping the keys out of sight.

A key is held in a :class:`Secret`, whose ``str`` and ``repr`` are masked, so a key that ends up in a
log line, an f-string or a debugger's view of an object does not show. :class:`Secret` and the masking
of known keys in server texts live in :mod:`jarvis_core.engine.redaction`.

Where settings come from, highest first: the engine's keyword arguments (the ``[engine.cloud]`` config
table arrives that way), then the environment variables below, then the public defaults.
"""

from __future__ import annotations

import os
from typing import Dict, Mapping, Optional, Tuple

import attrs

from jarvis_core.engine.redaction import Secret
from jarvis_core.errors import AuthenticationError
from jarvis_engine_cloud.routing import ANTHROPIC, GOOGLE, OPENAI

__all__ = [
    "KEY_VARS",
    "URL_VARS",
    "DEFAULT_URLS",
    "ProviderSettings",
    "Secret",
    "missing_key_error",
    "resolve_settings",
]

#: Environment variables holding each provider's key, in order of preference.
KEY_VARS: Dict[str, Tuple[str, ...]] = {
    OPENAI: ("OPENAI_API_KEY",),
    ANTHROPIC: ("ANTHROPIC_API_KEY",),
    GOOGLE: ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
#: Environment variables overriding each provider's base URL.
URL_VARS: Dict[str, str] = {OPENAI: "OPENAI_BASE_URL", ANTHROPIC: "ANTHROPIC_BASE_URL", GOOGLE: "GEMINI_BASE_URL"}
#: Public endpoints. OpenAI's includes the API version (as in OpenAI's own SDK); the other two do not.
DEFAULT_URLS: Dict[str, str] = {
    OPENAI: "https://api.openai.com/v1",
    ANTHROPIC: "https://api.anthropic.com",
    GOOGLE: "https://generativelanguage.googleapis.com",
}
#: The config key (= engine keyword argument) for each provider's key.
CONFIG_KEYS: Dict[str, str] = {OPENAI: "openai_api_key", ANTHROPIC: "anthropic_api_key", GOOGLE: "gemini_api_key"}

@attrs.frozen
class ProviderSettings:
    """One provider's key (masked in ``repr``), base URL and where each came from."""

    provider: str
    key: Optional[Secret] = attrs.field(repr=lambda k: "set" if k else "missing")
    base_url: str
    key_source: str = ""

    @property
    def has_key(self) -> bool:
        return bool(self.key)


def _clean_key(value: Optional[str], *, provider: str, source: str) -> Optional[Secret]:
    if value is None:
        return None
    value = value.strip()  # a key read from a file often ends with a newline
    if not value:
        return None
    if any(ord(ch) < 0x21 or ord(ch) > 0x7E for ch in value):
        # httpx would reject the header and quote the value in its error; refuse before that happens.
        raise AuthenticationError(
            f"cloud: the {provider} API key from {source} contains spaces or characters that are not allowed "
            "in an HTTP header; copy the key again",
            engine_id="cloud",
        )
    return Secret(value)


def resolve_settings(
    provider: str,
    *,
    api_key: Optional[str] = None,
    base_url: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> ProviderSettings:
    """The settings of ``provider`` from explicit values, else the environment, else the defaults."""
    env = os.environ if environ is None else environ
    key: Optional[Secret] = None
    source = ""
    if api_key is not None and api_key.strip():
        key, source = _clean_key(api_key, provider=provider, source=CONFIG_KEYS[provider]), CONFIG_KEYS[provider]
    else:
        for var in KEY_VARS[provider]:
            key = _clean_key(env.get(var), provider=provider, source=f"${var}")
            if key:
                source = var
                break
    url = (base_url or env.get(URL_VARS[provider]) or DEFAULT_URLS[provider]).strip()
    return ProviderSettings(provider=provider, key=key, base_url=url, key_source=source)


def missing_key_error(provider: str) -> AuthenticationError:
    """The error for a request to ``provider`` without a key: it names the variable to set."""
    names = " or ".join(KEY_VARS[provider])
    return AuthenticationError(
        f"cloud: no API key for {provider}; set {names} in the environment, or {CONFIG_KEYS[provider]} "
        "in the [engine.cloud] table of the config file",
        engine_id="cloud",
    )
