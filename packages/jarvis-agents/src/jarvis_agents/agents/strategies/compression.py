"""``observation_compression``: making a long tool output shorter before the model reads it.

``truncate`` keeps the first ``threshold`` characters and says how much was cut; ``summarize`` replaces the
output with a model-written summary (:data:`SUMMARY_PROMPT`, at most ``summary_input_chars`` of it sent);
``none`` leaves it as it is. Outputs up to ``threshold`` characters are never touched.
"""

from __future__ import annotations

__all__ = ["SUMMARY_PROMPT", "summarized", "truncated"]

SUMMARY_PROMPT = (
    "Summarise this tool output for an agent that will act on it. Keep every number, name, date, error and "
    "instruction it contains; drop repetition and boilerplate. Reply with the summary only.")


def truncated(text: str, threshold: int) -> str:
    """``text`` cut at ``threshold`` characters, with a visible marker saying how long it was."""
    if len(text) <= threshold:
        return text
    return f"{text[:threshold]}\n[observation truncated: {len(text)} characters, showing the first {threshold}]"


def summarized(summary: str, original_chars: int) -> str:
    """The observation that replaces a summarised output."""
    return f"[summary of a {original_chars}-character tool output]\n{summary.strip()}"
