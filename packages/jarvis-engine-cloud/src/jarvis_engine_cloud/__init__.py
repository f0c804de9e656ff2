"""jarvis-engine-cloud: engine ``cloud``, reaching OpenAI, Anthropic and Google Gemini over their REST APIs.

Importing this package imports nothing heavy; ``jarvis_engine_cloud.engine.CloudEngine`` is the engine.
"""

__all__ = ["CloudEngine"]


def __getattr__(name: str):
    if name == "CloudEngine":
        from jarvis_engine_cloud.engine import CloudEngine

        return CloudEngine
    raise AttributeError(f"module 'jarvis_engine_cloud' has no attribute {name!r}")
