"""Plugin loading and the registry, with real entry points.

Fake distributions are written as ``*.dist-info`` directories with an ``entry_points.txt`` into a
temporary directory put on ``sys.path``, so ``importlib.metadata`` discovers them exactly like installed
ones. Most tests pass an allow-list naming only their own plugins, so whatever else is installed does not
interfere.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import warnings
from typing import Dict

import pytest

from jarvis_core import hookimpl
from jarvis_core.errors import DuplicateRegistrationError, PluginError, PluginLoadError, UnknownNameError
from jarvis_core.plugins import (
    PluginLoadWarning,
    PluginWarning,
    Registry,
    get_registry,
    load_target,
    make_plugin_manager,
    reset_registry,
)
from jarvis_core.plugins import registry as registry_mod


def make_dist(site: pathlib.Path, dist: str, version: str, entry_points: Dict[str, str], modules: Dict[str, str]):
    """Write a distribution (its modules and a dist-info with entry points) into ``site``."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    eps = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[jarvis]\n{eps}")
    for name, source in modules.items():
        (site / f"{name}.py").write_text(textwrap.dedent(source))


ENGINE_PLUGIN = """
from jarvis_core import hookimpl

@hookimpl
def jarvis_register_engines(register):
    register("{key}", "{module}_engine:Engine", description="from {module}")
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    for var in ("JARVIS_LOAD_PLUGINS", "JARVIS_DISABLE_PLUGINS", "JARVIS_STRICT_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    yield site
    for name in [m for m in sys.modules if m.startswith("tp_")]:
        del sys.modules[name]


def engine_dist(site, dist, version, ep_name, module, key):
    make_dist(site, dist, version, {ep_name: module}, {module: ENGINE_PLUGIN.format(key=key, module=module)})


# -- provenance ---------------------------------------------------------------------------------------
def test_entry_point_registrations_carry_distribution_and_version(site):
    engine_dist(site, "jarvis-engine-alpha", "1.2.3", "engine-alpha", "tp_alpha", "alpha")
    reg = Registry(make_plugin_manager(allow=["engine-alpha"]))
    item = reg.get("engine", "alpha")
    assert (item.plugin, item.distribution, item.version) == ("engine-alpha", "jarvis-engine-alpha", "1.2.3")
    assert item.description == "from tp_alpha"
    assert item.to_json() == {"key": "alpha", "target": "tp_alpha_engine:Engine", "description": "from tp_alpha"}
    assert "jarvis-engine-alpha 1.2.3" in repr(item)


def test_in_process_plugins_report_their_own_name():
    class Plugin:
        @hookimpl
        def jarvis_register_tools(self, register):
            register("calc", "pkg.tools:Calc", discoverable=False, tags=("math",))

    reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("my-tools", Plugin())]))
    item = reg.get("tool", "calc")
    assert (item.plugin, item.distribution, item.version) == ("my-tools", "my-tools", "")
    assert item.extra == {"discoverable": False, "tags": ("math",)}
    assert item.to_json() == {"key": "calc", "target": "pkg.tools:Calc", "discoverable": False, "tags": ["math"]}


def test_hooks_run_once_per_plugin():
    calls = []

    class Plugin:
        @hookimpl
        def jarvis_register_engines(self, register):
            calls.append(1)
            register("e", "m:E")

    reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("p", Plugin())]))
    for _ in range(3):
        reg.get("engine", "e")
        list(reg)
    assert calls == [1]


def test_tools_found_by_discovery_are_registered_only_when_wanted():
    discoveries = []

    class Lister:
        @hookimpl
        def jarvis_register_tools(self, register):
            register("known", "m:Known", description="up front")

        @hookimpl
        def jarvis_discover_tools(self, register):
            discoveries.append(1)
            register("known", "m:Known", description="discovered")
            register("found", "m:Found")

    class Broken:
        @hookimpl
        def jarvis_register_tools(self, register):
            register("kept", "m:Kept")

        @hookimpl
        def jarvis_discover_tools(self, register):
            raise RuntimeError("the listing failed")

    reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("lister", Lister()), ("broken", Broken())]))
    assert sorted(reg.items("tool")) == ["kept", "known"] and [r.key for r in reg if r.kind == "tool"] == ["known", "kept"]
    assert reg.get("tool", "known").description == "up front" and discoveries == []  # registered keys: no discovery
    with pytest.warns(PluginLoadWarning, match=r"RuntimeError: the listing failed \(in jarvis_discover_tools; what it "
                                               r"registered up front stays\)"):
        assert reg.get("tool", "found").target == "m:Found"  # a key nobody registered up front: discovered
    assert reg.get("tool", "known").description == "discovered"  # the plugin's fuller registration replaced it
    assert sorted(reg.items("tool")) == ["found", "kept", "known"]
    with pytest.raises(UnknownNameError):
        reg.get("tool", "missing")
    reg.discover("tool")
    assert discoveries == [1]  # once per process


def test_backend_default_rules_keep_order_and_provenance():
    class A:
        @hookimpl
        def jarvis_backend_defaults(self, register):
            register("qwen3", tool_parser="hermes", sampling={"temperature": 0.6})
            register("llama-3", backends=("vllm",), tool_parser="llama3_json")

    reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("fam", A())]))
    assert [r[0] for r in reg.default_rules] == ["qwen3", "llama-3"]
    _, fields, plugin, dist, _ = reg.default_rules[1]
    assert fields == {"backends": ("vllm",), "tool_parser": "llama3_json"} and (plugin, dist) == ("fam", "fam")


# -- duplicates ---------------------------------------------------------------------------------------
def test_duplicate_key_names_both_distributions(site):
    engine_dist(site, "jarvis-engine-one", "1.0", "engine-one", "tp_one", "same")
    engine_dist(site, "jarvis-engine-two", "2.0", "engine-two", "tp_two", "same")
    with pytest.warns(PluginWarning, match="'same' is registered by both") as caught:
        reg = Registry(make_plugin_manager(allow=["engine-one", "engine-two"]))
    message = str(caught[0].message)
    assert "jarvis-engine-one 1.0" in message and "jarvis-engine-two 2.0" in message
    assert "JARVIS_DISABLE_PLUGINS=engine-two" in message and "every other key still works" in message
    with pytest.raises(DuplicateRegistrationError, match="unusable until one is removed"):  # unusable, not a pick
        reg.get("engine", "same")
    assert "same" not in reg.items("engine")
    with pytest.raises(DuplicateRegistrationError):  # strict mode: the clash is an error at once
        Registry(make_plugin_manager(allow=["engine-one", "engine-two"], strict=True))


def test_duplicate_parser_alias_is_caught_but_kinds_are_separate():
    class A:
        @hookimpl
        def jarvis_register_parsers(self, register):
            register("mistral", "m:T", kind="tool")
            register("mistral", "m:R", kind="reasoning")  # same name, other kind: fine
            register("qwen3_xml", "m:Q", kind="tool", aliases=("qwen3_coder",))

    class B:
        @hookimpl
        def jarvis_register_parsers(self, register):
            register("coder", "m:C", kind="tool", aliases=("qwen3_coder",))

    reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("a", A())]))
    assert reg.get("parser", "tool:qwen3_coder") is reg.get("parser", "tool:qwen3_xml")
    assert {"tool:mistral", "reasoning:mistral"} <= set(reg.items("parser"))
    with pytest.raises(DuplicateRegistrationError, match="qwen3_coder"):
        Registry(make_plugin_manager(load_entrypoints=False, strict=True, plugins=[("a", A()), ("b", B())]))


# -- allow / block lists ------------------------------------------------------------------------------
def test_allow_list_by_plugin_or_distribution_name(site, monkeypatch):
    engine_dist(site, "jarvis-engine-alpha", "1.0", "engine-alpha", "tp_alpha", "alpha")
    engine_dist(site, "jarvis-engine-beta", "1.0", "engine-beta", "tp_beta", "beta")
    monkeypatch.setenv("JARVIS_LOAD_PLUGINS", "engine-alpha, jarvis-engine-beta")
    pm = make_plugin_manager()
    assert {"engine-alpha", "engine-beta"} <= {name for name, _ in pm.list_name_plugin()}
    assert "core-parsers" in pm.skipped and "core-defaults" in pm.skipped  # built-ins obey the allow-list
    monkeypatch.setenv("JARVIS_LOAD_PLUGINS", "engine-alpha")
    keys = set(Registry(make_plugin_manager()).items("engine"))
    assert keys == {"alpha"}


def test_empty_allow_list_loads_nothing(site, monkeypatch):
    engine_dist(site, "jarvis-engine-alpha", "1.0", "engine-alpha", "tp_alpha", "alpha")
    monkeypatch.setenv("JARVIS_LOAD_PLUGINS", "")
    pm = make_plugin_manager()
    assert pm.get_plugins() == set() and "engine-alpha" in pm.skipped


def test_block_list_covers_built_ins(site, monkeypatch):
    monkeypatch.setenv("JARVIS_LOAD_PLUGINS", "jarvis-core")
    with_builtins = Registry(make_plugin_manager())
    assert with_builtins.pm.has_plugin("core-parsers")
    monkeypatch.setenv("JARVIS_DISABLE_PLUGINS", "core-parsers")
    pm = make_plugin_manager()
    assert not pm.has_plugin("core-parsers") and "core-parsers" in pm.skipped
    reg = Registry(pm)
    assert not any(r.plugin == "core-parsers" for r in reg)
    monkeypatch.setenv("JARVIS_DISABLE_PLUGINS", "jarvis-core")
    assert make_plugin_manager().get_plugins() == set()


def test_block_wins_over_allow(site):
    engine_dist(site, "jarvis-engine-alpha", "1.0", "engine-alpha", "tp_alpha", "alpha")
    pm = make_plugin_manager(allow=["engine-alpha"], block=["jarvis-engine-alpha"])
    assert not pm.has_plugin("engine-alpha")


# -- broken plugins -----------------------------------------------------------------------------------
def test_broken_entry_point_warns_once_and_the_rest_loads(site):
    make_dist(site, "jarvis-broken", "0.3", {"broken": "tp_broken"}, {"tp_broken": "raise ImportError('needs libfoo')\n"})
    engine_dist(site, "jarvis-engine-alpha", "1.0", "engine-alpha", "tp_alpha", "alpha")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pm = make_plugin_manager(allow=["broken", "engine-alpha"])
    relevant = [w for w in caught if issubclass(w.category, PluginLoadWarning)]
    assert len(relevant) == 1
    message = str(relevant[0].message)
    assert "'broken'" in message and "jarvis-broken 0.3" in message and "needs libfoo" in message
    assert "JARVIS_DISABLE_PLUGINS=broken" in message
    assert [f.to_json() for f in pm.failures] == [
        {"plugin": "broken", "distribution": "jarvis-broken", "version": "0.3", "error": "ImportError: needs libfoo"}
    ]
    assert set(Registry(pm).items("engine")) == {"alpha"}


def test_strict_mode_reraises(site, monkeypatch):
    make_dist(site, "jarvis-broken", "0.3", {"broken": "tp_broken"}, {"tp_broken": "raise ImportError('needs libfoo')\n"})
    with pytest.raises(PluginLoadError, match=r"jarvis-broken 0.3.*needs libfoo"):
        make_plugin_manager(allow=["broken"], strict=True)
    monkeypatch.setenv("JARVIS_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError):
        make_plugin_manager(allow=["broken"])


def test_unknown_hook_name_is_a_load_failure(site):
    source = """
    from jarvis_core import hookimpl

    @hookimpl
    def jarvis_register_widgets(register):
        register("w", "m:W")
    """
    make_dist(site, "jarvis-future", "9.0", {"future": "tp_future"}, {"tp_future": source})
    with pytest.warns(PluginLoadWarning) as caught:
        pm = make_plugin_manager(allow=["future"])
    # No near miss and no hook of any core: not a typo, and not blamed on the core's version either.
    assert [str(w.message) for w in caught] == [
        "jarvis plugin 'future' from jarvis-future 9.0 failed to load and was skipped: implements "
        "jarvis_register_widgets, which is not a jarvis hook (disable it with JARVIS_DISABLE_PLUGINS=future, or "
        "pip uninstall jarvis-future)"
    ]
    assert not pm.has_plugin("future")
    with pytest.raises(PluginLoadError, match="jarvis_register_widgets"):
        make_plugin_manager(allow=["future"], strict=True)


def test_unmarked_near_miss_is_a_hint_and_the_plugin_loads(site):
    source = """
    from jarvis_core import hookimpl

    def jarvis_register_engine(register):
        register("never", "m:Never")

    def jarvis_helper_table():
        return {}

    @hookimpl
    def jarvis_register_engines(register):
        register("ok", "m:Ok")
    """
    make_dist(site, "jarvis-typo", "1.0", {"typo": "tp_typo"}, {"tp_typo": source})
    with pytest.warns(PluginWarning) as caught:
        reg = Registry(make_plugin_manager(allow=["typo"]))
    # The near miss is named with its hook; a jarvis_* helper that resembles no hook is left alone.
    assert [str(w.message) for w in caught] == [
        "jarvis plugin 'typo' from jarvis-typo 1.0 defines jarvis_register_engine, which is not a jarvis hook; "
        "did you mean jarvis_register_engines (with @hookimpl)?"
    ]
    assert set(reg.items("engine")) == {"ok"}


def test_distribution_name_and_version_from_folded_or_late_metadata(site):
    # The header lines are read without the email parser: padding and folded lines as that parser takes
    # them; metadata without a Version line falls back to the full parse (an empty version, as before).
    engine_dist(site, "jarvis-engine-alpha", "1.0", "engine-alpha", "tp_alpha", "alpha")
    info = site / "jarvis_engine_alpha-1.0.dist-info" / "METADATA"
    info.write_text("Metadata-Version: 2.1\nName:   jarvis-engine-alpha  \nSummary: an\n  engine\nVersion: 1.0\n\nbody\n")
    engine_dist(site, "jarvis-engine-beta", "2.0", "engine-beta", "tp_beta", "beta")
    (site / "jarvis_engine_beta-2.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: jarvis-engine-beta\n")
    pm = make_plugin_manager(allow=["engine-alpha", "engine-beta"])
    assert pm.distribution_of("engine-alpha") == ("jarvis-engine-alpha", "1.0")
    assert pm.distribution_of("engine-beta") == ("jarvis-engine-beta", "")


def test_plugin_whose_hook_raises_is_isolated(site):
    source = """
    from jarvis_core import hookimpl

    @hookimpl
    def jarvis_register_engines(register):
        register("half", "m:Half")
        raise RuntimeError("bug in the plugin")
    """
    make_dist(site, "jarvis-buggy", "0.1", {"buggy": "tp_buggy"}, {"tp_buggy": source})
    engine_dist(site, "jarvis-engine-alpha", "1.0", "engine-alpha", "tp_alpha", "alpha")
    with pytest.warns(PluginLoadWarning, match=r"jarvis-buggy 0.1.*bug in the plugin"):
        reg = Registry(make_plugin_manager(allow=["buggy", "engine-alpha"]))
    assert set(reg.items("engine")) == {"alpha"}  # nothing half-registered by the broken plugin
    with pytest.raises(PluginLoadError, match="bug in the plugin"):
        Registry(make_plugin_manager(allow=["buggy"], strict=True))


def test_broken_in_process_plugin():
    class Bad:
        @hookimpl
        def jarvis_register_parsers(self, register):
            register("p", "m:P", kind="sideways")

    class Good:
        @hookimpl
        def jarvis_register_engines(self, register):
            register("good", "m:Good")

    with pytest.warns(PluginLoadWarning, match="kind='sideways'"):
        reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("bad", Bad()), ("good", Good())]))
    assert set(reg.items("engine")) == {"good"} and reg.items("parser") == {}
    assert [f.plugin for f in reg.pm.failures] == ["bad"]
    with pytest.raises(PluginLoadError, match="sideways"):
        Registry(make_plugin_manager(load_entrypoints=False, strict=True, plugins=[("bad", Bad())]))


def test_invalid_registrations_are_plugin_errors():
    class EmptyKey:
        @hookimpl
        def jarvis_register_engines(self, register):
            register("", "m:E")

    class BadPattern:
        @hookimpl
        def jarvis_backend_defaults(self, register):
            register(42)

    for plugin, match in ((EmptyKey(), "empty or non-string key"), (BadPattern(), "non-string pattern")):
        with pytest.raises(PluginLoadError, match=match):
            Registry(make_plugin_manager(load_entrypoints=False, strict=True, plugins=[("p", plugin)]))


@pytest.mark.parametrize(("hook", "what"), [("jarvis_register_engines", "an engine"), ("jarvis_register_agents", "an agent"),
                                            ("jarvis_register_tools", "a tool")])
def test_a_bad_key_message_uses_the_right_article(hook, what):
    plugin = type("EmptyKey", (), {hook: staticmethod(hookimpl(lambda register: register(None, "m:E")))})()
    with pytest.raises(PluginLoadError) as caught:
        Registry(make_plugin_manager(load_entrypoints=False, strict=True, plugins=[("p", plugin)]))
    assert str(caught.value) == (
        f"plugin 'p' from p ? failed to load: PluginError: registered {what} with an empty or non-string key "
        f"(None) (in {hook})"
    )


# -- lazy targets, lookup -----------------------------------------------------------------------------
def test_targets_are_not_imported_until_loaded(site):
    engine_dist(site, "jarvis-engine-lazy", "1.0", "engine-lazy", "tp_lazy", "lazy")
    (site / "tp_lazy_engine.py").write_text("class Engine:\n    pass\n")
    reg = Registry(make_plugin_manager(allow=["engine-lazy"]))
    assert "tp_lazy" in sys.modules and "tp_lazy_engine" not in sys.modules
    cls = reg.load("engine", "lazy")
    assert cls.__name__ == "Engine" and "tp_lazy_engine" in sys.modules
    assert reg.load("engine", "lazy") is cls


def test_load_target_forms():
    assert load_target("json:dumps") is json.dumps
    assert load_target("json.decoder:JSONDecoder.decode") is json.decoder.JSONDecoder.decode
    obj = object()
    assert load_target(obj) is obj
    for bad in ("json", ":x", "json:"):
        with pytest.raises(PluginError, match=r"expected 'package\.module:attribute'"):
            load_target(bad)
    with pytest.raises(ModuleNotFoundError):
        load_target("no_such_module_xyz:X")


def test_unknown_names_list_the_available_ones():
    class P:
        @hookimpl
        def jarvis_register_engines(self, register):
            register("ollama", "m:O")
            register("vllm", "m:V")

        @hookimpl
        def jarvis_register_parsers(self, register):
            register("hermes", "m:H", kind="tool")

        @hookimpl
        def jarvis_register_prompt_providers(self, register):
            register("Qwen3Chat", "m:Q")

    reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("p", P())]))
    with pytest.raises(UnknownNameError) as info:
        reg.get("engine", "olama")
    assert str(info.value) == "unknown engine 'olama'; available: ollama, vllm"
    assert info.value.available == ("ollama", "vllm") and isinstance(info.value, LookupError)
    with pytest.raises(UnknownNameError, match="unknown tool parser 'x'; available: hermes"):
        reg.get("parser", "tool:x")
    with pytest.raises(UnknownNameError, match="unknown agent 'a'; available: none installed"):
        reg.get("agent", "a")
    with pytest.raises(UnknownNameError, match="unknown prompt provider"):
        reg.get("prompt_provider", "nope")
    assert reg.get("prompt_provider", "qwen3chat").key == "Qwen3Chat"  # case-insensitive


def test_object_targets_and_iteration():
    class Engine:
        pass

    class P:
        @hookimpl
        def jarvis_register_engines(self, register):
            register("obj", Engine)

    reg = Registry(make_plugin_manager(load_entrypoints=False, plugins=[("p", P())]))
    assert reg.load("engine", "obj") is Engine
    assert reg.get("engine", "obj").target_name().endswith(":test_object_targets_and_iteration.<locals>.Engine")
    assert [r.key for r in reg] == ["obj"]


def test_get_registry_is_cached_and_resettable(monkeypatch):
    monkeypatch.setenv("JARVIS_LOAD_PLUGINS", "")
    reset_registry(None)
    try:
        first = get_registry()
        assert get_registry() is first
        own = Registry(make_plugin_manager(load_entrypoints=False))
        reset_registry(own)
        assert get_registry() is own
    finally:
        reset_registry(None)
    assert registry_mod._registry is None


# -- import cost --------------------------------------------------------------------------------------
def _modules_after(code: str) -> set:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_jarvis_core_is_light():
    mods = _modules_after("import jarvis_core\nfrom jarvis_core import hookimpl")
    heavy = {m for m in mods if m.split(".")[0] in ("httpx", "httpcore", "attrs", "attr", "cattrs", "anyio")}
    assert heavy == set()
    assert not any(m.startswith("jarvis_engine_") or m.startswith("jarvis_agents") for m in mods)
    assert not any(m.startswith(("jarvis_core.testing", "jarvis_core.engine", "jarvis_core.plugins.")) for m in mods)


def test_listing_plugins_imports_no_engine_code():
    mods = _modules_after(
        "from jarvis_core.plugins import get_registry\n"
        "reg = get_registry()\n"
        "[r.to_json() for r in reg]"
    )
    assert not {m for m in mods if m.split(".")[0] in ("httpx", "httpcore")}, "listing plugins imported httpx"
    engine_modules = {m for m in mods if m.startswith("jarvis_engine_") and "." in m}
    assert {m.split(".", 1)[1] for m in engine_modules} <= {"plugin"}, engine_modules


def test_every_switch_reads_the_environment_the_same_way():
    """JARVIS_DEBUG, JARVIS_STRICT_PLUGINS (plugin manager and plugin config sections) share env_flag."""
    from jarvis_core.switches import env_flag

    for on in ("1", "true", "TRUE", " yes ", "On"):
        assert env_flag("X", {"X": on})
    for off in ("", "0", "false", "no", "off", "2", "enabled"):
        assert not env_flag("X", {"X": off})
    assert not env_flag("X", {})
