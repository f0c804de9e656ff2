"""jarvis-engine-openai-compat: engines for OpenAI-compatible servers, and a managed llama.cpp server.

Three parts, each a subpackage:

- :mod:`.engines`: the engines registered with jarvis: a generic OpenAI-compatible base and the vLLM,
  SGLang, LM Studio, llama.cpp and ``openai-compat`` engines over HTTP, plus the ``embedded`` engine that
  starts a managed llama.cpp server on first use.
- :mod:`.server`: the managed llama.cpp server: launching the process (``llama-server`` or llama.cpp's
  own server hosted by xllamacpp), supervising it, judging its liveness, restarting it.
- :mod:`.worker`: the request runtime on top of both: a polling API over N slots, requests streamed
  through the ``llamacpp`` engine, the tool loop, control signals, the BIOS prompt layer, loop detection.

``plugin`` registers the engines and the config sections (``config``). Importing this package imports
nothing else.
"""
