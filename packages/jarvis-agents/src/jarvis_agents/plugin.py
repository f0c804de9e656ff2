"""Entry point of jarvis-agents: registers its agents and tools.

Targets are ``"module:attribute"`` strings, so ``jarvis plugins`` imports none of the agent or tool code; the
isolation shown by ``jarvis agents``/``jarvis tools`` is a callable the listing calls, so the sandbox is not
imported until something is listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jarvis_core import hookimpl

if TYPE_CHECKING:
    from jarvis_core.plugins.registry import Register

_AGENTS = "jarvis_agents.agents"
_TOOLS = "jarvis_agents.tools"


def _isolation() -> str:
    """What a code-running agent or tool gets by default here: the jail, or why not (cheap checks only)."""
    from jarvis_agents.sandbox.jail import jail_status

    return jail_status().describe()


@hookimpl
def jarvis_register_agents(register: Register) -> None:
    isolation = _isolation  # computed when listed
    register("simple", f"{_AGENTS}.simple:SimpleAgent", description="one model call, no tools")
    register("orchestrator", f"{_AGENTS}.orchestrator:OrchestratorAgent",
             description="tool loop; mode function_calling | structured | text | auto (default auto)")
    register("native_react", f"{_AGENTS}.react:ReActAgent",
             description="Thought / Action / Action Input / Final Answer text protocol with stop sequences")
    register("react", f"{_AGENTS}.react:ReActAgent", description="alias of native_react", alias_of="native_react")
    register("native_openhands", f"{_AGENTS}.codeact:CodeActAgent",
             description="CodeAct: native calls, fenced Python run in a persistent sandboxed REPL, Hermes and Action text",
             isolation=isolation)
    register("codeact", f"{_AGENTS}.codeact:CodeActAgent", description="alias of native_openhands",
             alias_of="native_openhands", isolation=isolation)
    register("rlm", f"{_AGENTS}.rlm:RLMAgent",
             description="Recursive LM: the context lives in a sandboxed REPL; llm_query/llm_batch/tool_call; FINAL(x)",
             isolation=isolation)
    register("operative", f"{_AGENTS}.operative:OperativeAgent",
             description="tool loop that remembers between runs (state and session in SQLite, per operator id)")
    register("monitor_operative", f"{_AGENTS}.monitor:MonitorOperativeAgent",
             description="operative with strategy axes: memory_extraction, observation_compression, "
                         "retrieval_strategy, task_decomposition")
    register("claude_code", "jarvis_agents.wrapped.claude_code:ClaudeCodeAgent",
             description="Anthropic's Claude Code CLI, run once per request (needs claude and ANTHROPIC_API_KEY; "
                         "jarvis wrappers check)")
    register("openhands", "jarvis_agents.wrapped.openhands:OpenHandsAgent",
             description="the OpenHands SDK in a child process (extra jarvis-agents[openhands]; docker unless "
                         "runtime=local)")


@hookimpl
def jarvis_register_tools(register: Register) -> None:
    isolation = _isolation  # computed when listed
    register("calculator", f"{_TOOLS}.calculator:Calculator", description="exact, bounded arithmetic")
    register("think", f"{_TOOLS}.think:think", description="a scratchpad; returns the thought")
    register("file_read", f"{_TOOLS}.files:FileReadTool",
             description="read a text file inside [tools.file_read] roots")
    register("file_write", f"{_TOOLS}.files:FileWriteTool",
             description="write a text file inside [tools.file_write] roots (needs confirmation)")
    register("llm", f"{_TOOLS}.llm:LLMTool", description="ask the agent's model a sub-question (usage counted)")
    register("memory_store", f"{_TOOLS}.memory:MemoryStoreTool",
             description="remember text (optionally under a key) in memory.db in the jarvis home")
    register("memory_retrieve", f"{_TOOLS}.memory:MemoryRetrieveTool", description="recall the text stored under a key")
    register("memory_search", f"{_TOOLS}.memory:MemorySearchTool", description="full-text search of remembered text")
    register("code_interpreter", f"{_TOOLS}.code:CodeInterpreterTool",
             description="run Python in the sandbox (separate process, clean environment, limits)", isolation=isolation)
    register("shell_exec", f"{_TOOLS}.code:ShellExecTool", description="opt-in ([tools.shell_exec] enabled = true): "
             "run a /bin/sh command in the sandbox (needs confirmation)", opt_in=True,
             isolation=isolation)
    register("web_search", f"{_TOOLS}.search:WebSearchTool",
             description="search the web: titles, URLs, snippets ([tools.web_search] backend: searxng, brave, tavily, "
                         "duckduckgo)")
    register("web_fetch", f"{_TOOLS}.web:WebFetchTool",
             description="fetch a public web page as text (SSRF check on every redirect hop)")


@hookimpl
def jarvis_register_commands(register: Register) -> None:
    register("operators", "jarvis_agents.operators.cli",
             description="run operative agents once or on a schedule; list and show operators")
    register("wrappers", "jarvis_agents.wrapped.cli",
             description="check and set up the wrapped agent runtimes (claude_code, openhands)")


@hookimpl
def jarvis_register_config_sections(register: Register) -> None:
    register("sandbox", "jarvis_agents.sandbox.uids:SandboxSettings")  # [sandbox] uid_range
