"""The agents of jarvis-agents, one module each (imported only when the agent is used)."""
