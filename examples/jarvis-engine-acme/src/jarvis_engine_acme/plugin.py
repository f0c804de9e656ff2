"""The entry point of jarvis-engine-acme: hook implementations only, registering strings (nothing imported)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import DefaultsRegister, ParserRegister, Register


@hookimpl
def jarvis_register_engines(register: Register) -> None:
    register("acme", "jarvis_engine_acme.engine:AcmeEngine", description="the Acme chat server (example plugin)")


@hookimpl
def jarvis_register_parsers(register: ParserRegister) -> None:
    register("acme_call", "jarvis_engine_acme.parser:AcmeCallParser", kind="tool",
             description="<call>{json}</call> tool calls written as text")


@hookimpl
def jarvis_backend_defaults(register: DefaultsRegister) -> None:
    register("acme", backends=("*",), tool_parser="acme_call", sampling={"temperature": 0.3, "top_p": 0.9})


@hookimpl
def jarvis_register_config_sections(register: Register) -> None:
    register("engine.acme", "jarvis_engine_acme.config:AcmeConfig")
