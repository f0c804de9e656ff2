"""jarvis-prompts-qwen: prompt providers for Qwen 2.5, Qwen 3 and Qwen 3.5 models.

The providers are registered through the ``jarvis`` entry point (:mod:`jarvis_prompts_qwen.plugin`) and found
by name with ``jarvis_core.prompts.get_provider("Qwen25MediumUntrained")``; importing this package imports
none of them.
"""

from __future__ import annotations

__version__ = "0.2.0"
