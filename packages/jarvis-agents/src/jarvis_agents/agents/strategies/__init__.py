"""What each strategy axis of ``monitor_operative`` does, one module per axis: the prompts of the extra model
calls and the code that reads their replies (:mod:`.extraction`, :mod:`.compression`, :mod:`.retrieval`,
:mod:`.planning`). The agent (:mod:`jarvis_agents.agents.monitor`) makes the calls and writes the rows."""
