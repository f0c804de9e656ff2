"""The core's built-in prompts plugin (entry point ``core-prompts``).

Registers :class:`~jarvis_core.prompts.PromptDrivenAgent` as the agent ``prompt_driven``, so a prompt
provider can drive a tool loop from the CLI (``jarvis ask --agent prompt_driven --prompt-provider NAME
--tools …``) without any agents plugin. The target is a string: nothing is imported until the agent is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Register


@hookimpl
def jarvis_register_agents(register: Register) -> None:
    register("prompt_driven", "jarvis_core.prompts.agent:PromptDrivenAgent",
             description="tool loop whose prompts and reply parsing come from --prompt-provider")
