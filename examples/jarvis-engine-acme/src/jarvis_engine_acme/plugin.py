"""The entry point of jarvis-engine-acme: hook implementations only, registering strings (nothing imported)."""

from jarvis_core import hookimpl


@hookimpl
def jarvis_register_engines(register):
    register("acme", "jarvis_engine_acme.engine:AcmeEngine", description="the Acme chat server (example plugin)")


@hookimpl
def jarvis_register_parsers(register):
    register("acme_call", "jarvis_engine_acme.parser:AcmeCallParser", kind="tool",
             description="<call>{json}</call> tool calls written as text")


@hookimpl
def jarvis_backend_defaults(register):
    register("acme", backends=("*",), tool_parser="acme_call", sampling={"temperature": 0.3, "top_p": 0.9})


@hookimpl
def jarvis_register_config_sections(register):
    register("engine.acme", "jarvis_engine_acme.config:AcmeConfig")
