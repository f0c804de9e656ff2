"""The compatibility promise and use-time plugin mistakes (docs/contract.md §11, docs/plugins.md), each made by
a real distribution pip-installed into one real venv and seen through the real ``jarvis`` command, with the
exact message asserted. Each test selects the plugins it exercises with ``JARVIS_LOAD_PLUGINS``.
"""

from __future__ import annotations

import json
from importlib.metadata import version

import httpx
import pytest

from jarvis_core.testing import Exchange, ReplayServer

pytestmark = pytest.mark.slow

V = "0.1.0"
CORE = "core-parsers,core-defaults,engine-echo"

PLUGINS = {
    # name: (its Requires-Dist, {module path: source})
    "oldapi": (["jarvis-core>=0.1,<0.2"], {
        # Written against the 0.1.0 docs: line streams, and an event type that is gone.
        "jarvis_plugin_oldapi/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_engines(register):
                register("oldapi", "jarvis_plugin_oldapi.engine:OldApiEngine", discoverable=False)
                register("oldevents", "jarvis_plugin_oldapi.engine:OldEventsEngine", discoverable=False)
            """,
        "jarvis_plugin_oldapi/engine.py": """\
            from jarvis_core.engine.http import HTTPEngine
            from jarvis_core.types import Completion

            class OldApiEngine(HTTPEngine):
                engine_id = "oldapi"

                def generate(self, messages, *, model, **options):
                    with self.stream_lines("GET", "/lines") as lines:
                        return Completion(" ".join(lines))

                async def stream(self, messages, *, model, **options):
                    async with self.astream_lines("GET", "/lines") as lines:
                        async for line in lines:
                            yield line + " "

                def list_models(self):
                    return ["m"]

            class OldEventsEngine(OldApiEngine):
                engine_id = "oldevents"

                def generate(self, messages, *, model, **options):
                    from jarvis_core.events import EventType
                    return Completion(EventType.STREAM_START.value)

                async def stream(self, messages, *, model, **options):
                    from jarvis_core.events import EventType
                    yield EventType.STREAM_END.value
            """,
    }),
    "badagents": ([], {
        "jarvis_plugin_badagents/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_agents(register):
                register("crashes", "jarvis_plugin_badagents.agents:CrashingAgent")
                register("oldloop", "jarvis_plugin_badagents.agents:AcmeLoopAgent")
            """,
        "jarvis_plugin_badagents/agents.py": """\
            from jarvis_core.agents import BaseAgent

            class CrashingAgent(BaseAgent):
                agent_id = "crashes"

                async def loop(self, run):
                    raise RuntimeError("the acme planner lost its plan")
                    yield  # an async generator, as BaseAgent.loop is

            class AcmeLoopAgent:  # written to the old contract: no BaseAgent, no astream
                def __init__(self, engine, **kwargs):
                    self.engine = engine

                def run(self, input, context=None):
                    return "never"
            """,
    }),
    "policytools": ([], {
        "jarvis_plugin_policytools/plugin.py": """\
            from jarvis_core import hookimpl

            M = "jarvis_plugin_policytools.tools"

            @hookimpl
            def jarvis_register_tools(register):
                register("liar", M + ":LyingTool", description="its extras say harmless", side_effects="none",
                         confirm=False)
                register("honest", M + ":HonestTool", description="a policy and nothing else")
                register("oldstyle", M + ":make_tool", description="a factory; only extras", side_effects="read",
                         confirm=True)
            """,
        "jarvis_plugin_policytools/tools.py": """\
            from jarvis_core.tools import BaseTool, ToolPolicy
            from jarvis_core.types import ToolSpec

            SPEC = ToolSpec("t", "a tool", {"type": "object", "properties": {}})

            class LyingTool(BaseTool):
                spec = SPEC
                policy = ToolPolicy(side_effects="write", confirm=True)

                def run(self, **arguments):
                    return "wrote"

            class HonestTool(LyingTool):
                policy = ToolPolicy(side_effects="read")

            def make_tool():
                return HonestTool()
            """,
    }),
    "badprompts": ([], {
        "jarvis_plugin_badprompts/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_prompt_providers(register):
                register("acme", "jarvis_plugin_badprompts.providers:AcmePromptProvider")
                register("crashy", "jarvis_plugin_badprompts.providers:CrashyProvider")
            """,
        "jarvis_plugin_badprompts/providers.py": """\
            from jarvis_core.prompts import PromptProvider

            class AcmePromptProvider:  # not a PromptProvider
                name = "acme"

            class CrashyProvider(PromptProvider):
                name = "crashy"

                def __init__(self):
                    raise RuntimeError("no acme templates")

                def build_system_prompt(self, *args, **kwargs):
                    return ""
            """,
    }),
    "badengine": ([], {
        "jarvis_plugin_badengine/plugin.py": """\
            from jarvis_core import hookimpl

            M = "jarvis_plugin_badengine.engine"

            @hookimpl
            def jarvis_register_engines(register):
                register("acme", M + ":AcmeEngine", discoverable=False)
                register("acme-lite", M + ":AcmeLiteEngine", discoverable=False)
            """,
        "jarvis_plugin_badengine/engine.py": """\
            from jarvis_core.engine.base import InferenceEngine
            from jarvis_plugin_badengine.wire import send

            class AcmeLiteEngine(InferenceEngine):
                engine_id = "acme-lite"

                def generate(self, messages, *, model, **options):
                    return send(messages)

                async def stream(self, messages, *, model, **options):
                    yield send(messages)

                def list_models(self):
                    return ["m"]

                def health(self):
                    return True

            class AcmeEngine(AcmeLiteEngine):  # same methods: the instance says which engine ran
                engine_id = "acme"
            """,
        "jarvis_plugin_badengine/wire.py": """\
            def send(messages):
                raise RuntimeError("the acme backend dropped the request")
            """,
    }),
    "badschema": ([], {
        "jarvis_plugin_badschema/plugin.py": """\
            from jarvis_core import hookimpl

            @hookimpl
            def jarvis_register_config_sections(register):
                register("acmeconf", "jarvis_plugin_badschema.config:AcmeConf")
            """,
        "jarvis_plugin_badschema/config.py": """\
            class AcmeConf:  # a plain class, not attrs
                level = 1
            """,
    }),
}


def _dist(name: str) -> str:
    return f"jarvis-plugin-{name}"


@pytest.fixture(scope="module")
def contract_venv(plugin_venv, plugin_project, example_echo_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("contract-projects")
    projects = [
        plugin_project(root, _dist(name), V, {name: f"jarvis_plugin_{name}.plugin"}, modules, dependencies=requires)
        for name, (requires, modules) in PLUGINS.items()
    ]
    return plugin_venv("contract", [*projects, example_echo_project])


def _run(venv, *args, load: str, env=None):
    return venv.jarvis(*args, env={"JARVIS_LOAD_PLUGINS": f"{CORE},{load}", **(env or {})})


def _lines(proc, kind: str) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith(f"jarvis: {kind}: ")]


USED_BY = f"(used by jarvis_plugin_oldapi.engine, from {_dist('oldapi')} {V})"


@pytest.fixture
def lines_server():
    with ReplayServer([Exchange("GET", "/lines", ndjson=[{"n": 1}, {"n": 2}])] * 2) as server:
        yield server


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_plugin_written_for_0_1_0_still_runs_and_is_told_what_replaces_a_removed_name(
        contract_venv, lines_server, json_flag):
    proc = _run(contract_venv, "ask", *json_flag, "--engine", "oldapi", "--host", lines_server.url, "--model", "m",
                "hi", load="oldapi")
    assert proc.returncode == 0, proc.stderr
    text = json.loads(proc.stdout)["content"] if json_flag else proc.stdout
    assert text.split() == ['{"n":', '1}', '{"n":', '2}']
    name = "stream_lines" if json_flag else "astream_lines"
    assert _lines(proc, "warning") == [
        f"jarvis: warning: HTTPEngine.{name} is deprecated since jarvis-core 0.2.0 and will be removed in 1.0.0; use "
        f"astream_batches(method, path, LineByteDecoder(), ...) instead {USED_BY}"
    ]


@pytest.mark.parametrize(("json_flag", "member"), [([], "END"), (["--json"], "START")])
def test_a_removed_name_is_an_error_naming_it_its_version_its_replacement_and_the_plugin(
        contract_venv, lines_server, json_flag, member):
    proc = _run(contract_venv, "ask", *json_flag, "--engine", "oldevents", "--host", lines_server.url, "--model", "m",
                "hi", load="oldapi")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "a bug in jarvis" not in proc.stderr
    assert _lines(proc, "error") == [
        f"jarvis: error: EventType.STREAM_{member} was removed in jarvis-core 0.2.0; use EventType.INFERENCE_{member} "
        f"(its data has stream=True) instead {USED_BY}"
    ]


OUTSIDE = (f"jarvis: warning: plugin 'oldapi' ({_dist('oldapi')} {V}) declares jarvis-core<0.2,>=0.1, and this is "
           "jarvis-core 0.2.0: it may use names this core does not have; install a version of "
           f"{_dist('oldapi')} made for jarvis-core 0.2.0")


def test_jarvis_plugins_shows_each_declared_core_range_and_warns_outside_it(contract_venv):
    proc = _run(contract_venv, "plugins", "--json", load="oldapi")
    assert proc.returncode == 0, proc.stderr
    assert _lines(proc, "warning") == [OUTSIDE]
    plugins = {p["name"]: p for p in json.loads(proc.stdout)["plugins"]}
    assert (plugins["oldapi"]["core_requirement"], plugins["oldapi"]["core_compatible"]) == ("<0.2,>=0.1", False)
    assert (plugins["engine-echo"]["core_requirement"], plugins["engine-echo"]["core_compatible"]) == ("<1,>=0.2", True)
    assert (plugins["core-parsers"]["core_requirement"], plugins["core-parsers"]["core_compatible"]) == ("", None)

    table = _run(contract_venv, "plugins", load="oldapi")
    assert _lines(table, "warning") == [OUTSIDE]
    lines = table.stdout.splitlines()
    at = lines.index("jarvis-core versions the distributions declare (this is 0.2.0):")
    assert [line.split() for line in lines[at + 1:at + 4]] == [
        ["DISTRIBUTION", "REQUIRES", "COMPATIBLE"],
        ["jarvis-engine-echo", "<1,>=0.2", "yes"],
        [_dist("oldapi"), "<0.2,>=0.1", "NO"],
    ]


BADAGENTS = f"(plugin 'badagents', {_dist('badagents')} {V})"
FIX = "report it to the plugin's authors, or disable it with JARVIS_DISABLE_PLUGINS=badagents"


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_an_agent_whose_run_raises_is_named_with_its_plugin(contract_venv, json_flag):
    proc = _run(contract_venv, "ask", *json_flag, "--engine", "echo", "--agent", "crashes", "hi", load="badagents")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "a bug in jarvis" not in proc.stderr
    assert _lines(proc, "error") == [
        f"jarvis: error: agent 'crashes' {BADAGENTS} failed while running: RuntimeError: the acme planner lost its "
        f"plan; {FIX}"
    ]


def test_an_agent_target_that_is_not_a_base_agent_is_a_named_plugin_error(contract_venv):
    proc = _run(contract_venv, "ask", "--engine", "echo", "--agent", "oldloop", "hi", load="badagents")
    assert proc.returncode == 1
    assert "has no attribute" not in proc.stderr
    assert _lines(proc, "error") == [
        f"jarvis: error: agent 'oldloop' {BADAGENTS} is registered as 'jarvis_plugin_badagents.agents:AcmeLoopAgent', "
        f"which is not a subclass of jarvis_core.agents.BaseAgent (which gives run, arun and astream); {FIX}"
    ]


POLICYTOOLS = f"(plugin 'policytools', {_dist('policytools')} {V})"


def _extras_warning(key: str) -> str:
    return (f"jarvis: warning: tool {key!r} {POLICYTOOLS} states side_effects and confirm as register() extras, which "
            "are deprecated since jarvis-core 0.2.0 and ignored from 1.0.0; give the tool class (or instance) a policy "
            "= jarvis_core.tools.ToolPolicy(...) instead")


def test_jarvis_tools_reads_side_effects_and_confirm_from_the_tool_policy(contract_venv):
    proc = _run(contract_venv, "tools", "--json", load="policytools")
    assert proc.returncode == 0, proc.stderr
    rows = {r["key"]: (r["side_effects"], r["confirm"]) for r in json.loads(proc.stdout)}
    # The policy is the one source of truth: the extras' "none"/False lose to the class's ToolPolicy.
    assert rows == {"liar": ("write", True), "honest": ("read", False), "oldstyle": ("read", True)}
    assert _lines(proc, "warning") == [_extras_warning("liar"), _extras_warning("oldstyle")]
    table = _run(contract_venv, "tools", load="policytools").stdout.splitlines()
    assert [line.split()[:3] for line in table] == [
        ["KEY", "SIDE", "EFFECTS"], ["honest", "read", "no"], ["liar", "write", "yes"], ["oldstyle", "read", "yes"]]


BADPROMPTS = f"(plugin 'badprompts', {_dist('badprompts')} {V})"
PROMPTS_FIX = "report it to the plugin's authors, or disable it with JARVIS_DISABLE_PLUGINS=badprompts"
ACME = (f"prompt provider 'acme' {BADPROMPTS} built 'AcmePromptProvider', which is not a "
        f"jarvis_core.prompts.PromptProvider; {PROMPTS_FIX}")
CRASHY = f"prompt provider 'crashy' {BADPROMPTS} failed to build: RuntimeError: no acme templates; {PROMPTS_FIX}"


def test_broken_prompt_providers_are_named_and_listed_as_broken(contract_venv):
    proc = _run(contract_venv, "prompts", "list", "--json", load="badprompts")
    assert proc.returncode == 0, proc.stderr
    assert _lines(proc, "warning") == [f"jarvis: warning: {ACME}", f"jarvis: warning: {CRASHY}"]
    assert [(d["name"], d["broken"], d["error"]) for d in json.loads(proc.stdout)] == [
        ("acme", True, ACME), ("crashy", True, CRASHY)]
    table = _run(contract_venv, "prompts", "list", load="badprompts").stdout.splitlines()
    assert table[:2] == ["no working prompt provider", "broken, not usable (2):"]
    assert [line.split() for line in table[2:]] == [
        ["NAME", "DISTRIBUTION", "VERSION"], ["acme", _dist("badprompts"), V], ["crashy", _dist("badprompts"), V]]


def test_a_broken_prompt_provider_in_use_is_one_plugin_error(contract_venv):
    proc = _run(contract_venv, "prompts", "show", "acme", load="badprompts")
    assert proc.returncode == 1
    assert _lines(proc, "error") == [f"jarvis: error: {ACME}"]


SCHEMA = (f"jarvis: warning: the schema of [acmeconf]: config section 'acmeconf' (plugin 'badschema', "
          f"{_dist('badschema')} {V}) is registered as 'jarvis_plugin_badschema.config:AcmeConf', the schema of "
          "[acmeconf], but it is not an attrs class; report it to the plugin's authors, or disable it with "
          "JARVIS_DISABLE_PLUGINS=badschema; [acmeconf] is used unchecked")


def test_a_config_schema_that_is_not_attrs_is_isolated_like_any_broken_plugin(contract_venv, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[acmeconf]\nlevel = 3\n", encoding="utf-8")
    env = {"JARVIS_CONFIG": str(config)}
    ask = _run(contract_venv, "ask", "--engine", "echo", "still", "works", load="badschema", env=env)
    assert (ask.returncode, ask.stdout) == (0, "still works\n"), ask.stderr
    assert _lines(ask, "warning") == [SCHEMA]
    shown = _run(contract_venv, "config", "show", "--json", load="badschema", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["acmeconf"] == {"level": 3}
    strict = _run(contract_venv, "ask", "--engine", "echo", "hi", load="badschema",
                  env={**env, "JARVIS_STRICT_PLUGINS": "1"})
    assert strict.returncode == 1 and _lines(strict, "error") == [
        "jarvis: error: " + SCHEMA.removeprefix("jarvis: warning: the schema of [acmeconf]: ").removesuffix(
            "; [acmeconf] is used unchecked")]


@pytest.fixture
def served(contract_venv, jarvis_serve):
    proc, url = jarvis_serve("--engine", "echo", "--agent", "crashes", python=str(contract_venv.python),
                             env=contract_venv.env({"JARVIS_LOAD_PLUGINS": f"{CORE},badagents,server"}))
    return url, proc


SERVED = (f"agent 'crashes' {BADAGENTS} failed while running (RuntimeError; see the server log); {FIX}")


@pytest.mark.parametrize("stream", [False, True])
def test_the_server_names_the_agent_its_plugin_and_distribution(served, stream):
    url, proc = served
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}  # the server's agent
    response = httpx.post(url + "/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 500
    error = response.json()["error"]
    assert (error["message"], error["code"]) == (SERVED, "plugin_error")
    assert "lost its plan" not in response.text  # the exception's own text is withheld
    proc.terminate()
    _out, err = proc.communicate(timeout=30)
    logged = [line for line in err.splitlines() if "unexpected RuntimeError" in line]
    assert len(logged) == 1, err
    assert f"unexpected RuntimeError while running agent 'crashes' {BADAGENTS}, raised at " in logged[0]
    assert "agents.py" in logged[0] and "in loop" in logged[0] and "lost its plan" not in err


AGENTS = f"(plugin 'agents', jarvis-agents {version('jarvis-agents')})"
BADENGINE = f"(plugin 'badengine', {_dist('badengine')} {V})"
ENGINE_FIX = f"report it to the authors of {_dist('badengine')}, or disable it with JARVIS_DISABLE_PLUGINS=badengine"


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_an_engine_that_raises_under_a_built_in_agent_is_named_with_its_distribution(contract_venv, json_flag):
    proc = _run(contract_venv, "ask", *json_flag, "--engine", "acme", "--model", "m", "--agent", "simple", "hi",
                load="badengine,agents")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "a bug in jarvis" not in proc.stderr
    assert _lines(proc, "error") == [
        f"jarvis: error: agent 'simple' {AGENTS} failed in engine 'acme' {BADENGINE}: RuntimeError: the acme backend "
        f"dropped the request; {ENGINE_FIX}"
    ]


def test_an_engine_that_raises_without_an_agent_is_named_with_its_distribution(contract_venv):
    proc = _run(contract_venv, "ask", "--engine", "acme", "--model", "m", "hi", load="badengine")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "a bug in jarvis" not in proc.stderr
    assert _lines(proc, "error") == [
        f"jarvis: error: engine 'acme' {BADENGINE} failed: RuntimeError: the acme backend dropped the request; report "
        "it to the plugin's authors, or disable it with JARVIS_DISABLE_PLUGINS=badengine; rerun with --debug for the "
        "traceback"
    ]


@pytest.fixture
def served_engine(contract_venv, jarvis_serve):
    proc, url = jarvis_serve("--engine", "acme", "--model", "m", "--agent", "simple",
                             python=str(contract_venv.python),
                             env=contract_venv.env({"JARVIS_LOAD_PLUGINS": f"{CORE},badengine,agents,server"}))
    return url, proc


@pytest.mark.parametrize("stream", [False, True])
def test_the_server_names_the_engine_that_raised_under_the_agent(served_engine, stream):
    url, proc = served_engine
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(url + "/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 500
    error = response.json()["error"]
    assert (error["message"], error["code"]) == (
        f"agent 'simple' {AGENTS} failed in engine 'acme' {BADENGINE} (RuntimeError; see the server log); {ENGINE_FIX}",
        "plugin_error")
    assert "dropped the request" not in response.text
    proc.terminate()
    _out, err = proc.communicate(timeout=30)
    logged = [line for line in err.splitlines() if "unexpected RuntimeError" in line]
    assert len(logged) == 1, err
    assert (f"unexpected RuntimeError while running agent 'simple' {AGENTS} in engine 'acme' {BADENGINE}, raised at "
            in logged[0])
    assert "wire.py" in logged[0] and "in send" in logged[0] and "dropped the request" not in err
