"""jarvis-prompts-families: prompt providers for the Hermes, Llama, Mistral and Gemma families.

The providers are registered through the ``jarvis`` entry point (:mod:`jarvis_prompts_families.plugin`) and
found by name with ``jarvis_core.prompts.get_provider("HermesMediumUntrained")``; importing this package
imports none of them. One module per family: :mod:`~jarvis_prompts_families.hermes`,
:mod:`~jarvis_prompts_families.llama`, :mod:`~jarvis_prompts_families.mistral`,
:mod:`~jarvis_prompts_families.gemma`; :mod:`~jarvis_prompts_families.layout` holds the prompt layout they
share.
"""

from __future__ import annotations

__version__ = "0.2.0"
