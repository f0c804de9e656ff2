"""Backend defaults computed by code (``register(..., compute="module:function")``): what the function is
told, how the ids it gives extend matching, where its values rank, and how a broken one is contained."""

from __future__ import annotations

import sys
import types

import pytest

from jarvis_core.defaults import Computed, ModelInfo, resolve
from jarvis_core.errors import ConfigError
from jarvis_core.testing import registry_with, simple_plugin

SEEN: list = []


def _module() -> str:
    """A module of hook functions, importable by name as a plugin's would be."""
    mod = types.ModuleType("computed_hooks_for_test")

    def from_file(info: ModelInfo):
        SEEN.append(info)
        if not info.path:
            return None
        return Computed(aliases=("Acme 2 7B",), sampling={"top_p": 0.5}, extras={"context_length": 2048})

    def broken(info: ModelInfo):
        raise RuntimeError("boom")

    def wrong(info: ModelInfo):
        return {"extras": {"x": 1}}

    mod.from_file, mod.broken, mod.wrong = from_file, broken, wrong  # type: ignore[attr-defined]
    sys.modules[mod.__name__] = mod
    return mod.__name__


MOD = _module()


def _registry(*rules):
    return registry_with(simple_plugin("acme", defaults=list(rules)))


@pytest.fixture(autouse=True)
def clear():
    SEEN.clear()


def test_the_function_gets_the_model_its_backend_and_file_and_its_aliases_match_the_family_rules(tmp_path):
    registry = _registry(("*", {"compute": f"{MOD}:from_file", "backends": ("llamacpp", "")}),
                         ("acme-2-7b", {"sampling": {"temperature": 0.3, "top_p": 0.9}, "extras": {"family": "acme"}}))
    model = tmp_path / "weights.gguf"
    model.write_bytes(b"not read by this hook")
    resolved = resolve("weights", "llamacpp", registry=registry, path=str(model))
    assert SEEN == [ModelInfo("weights", "llamacpp", str(model))]
    assert resolved.extras == {"context_length": 2048, "family": "acme"}  # the family rule matched via the alias
    assert resolved.sampling == {"top_p": 0.5, "temperature": 0.3}  # computed beats declared; the rest declared
    assert resolved.provenance["top_p"].pattern == f"computed by {MOD}:from_file"
    assert resolved.provenance["temperature"].pattern == "acme-2-7b"
    assert "acme-2-7b" in resolved.candidates
    # a .gguf path given as the model id is the path
    assert resolve(str(model), "llamacpp", registry=registry).extras["context_length"] == 2048
    # no file, or another backend: nothing computed, the name alone does not match the family
    assert resolve("weights", "llamacpp", registry=registry).extras == {}
    assert resolve("weights", "vllm", registry=registry, path=str(model)).extras == {}


def test_user_rules_still_win_over_computed_values(tmp_path):
    registry = _registry(("*", {"compute": f"{MOD}:from_file"}))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"")
    resolved = resolve("m", registry=registry, path=str(model), user_rules={"acme-2": {"top_p": 0.7}})
    assert resolved.sampling["top_p"] == 0.7 and resolved.provenance["top_p"].distribution == "user config"


@pytest.mark.parametrize("target, message", [("broken", "failed: RuntimeError: boom"),
                                             ("wrong", "not a Computed or None")])
def test_a_broken_function_is_a_warning_naming_the_distribution_not_a_failure(target, message, tmp_path):
    registry = _registry(("*", {"compute": f"{MOD}:{target}"}), ("m", {"sampling": {"temperature": 0.1}}))
    with pytest.warns(RuntimeWarning, match=message) as caught:
        resolved = resolve("m", registry=registry, path=str(tmp_path / "m.gguf"))
    assert resolved.sampling == {"temperature": 0.1}
    assert "backend-default rule '*'" in str(caught[0].message)


def test_star_needs_compute_and_the_config_cannot_compute():
    with pytest.warns(RuntimeWarning, match=r"pattern '\*' is only for a rule with compute"):
        resolve("anything", registry=_registry(("*", {"sampling": {"temperature": 0.1}})))
    with pytest.raises(ConfigError, match="compute is for plugins"):
        resolve("m", user_rules={"m": {"compute": f"{MOD}:from_file"}})
