"""The tools of jarvis-agents, one module each (imported only when the tool is used)."""
