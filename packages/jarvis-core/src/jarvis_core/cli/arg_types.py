"""Argument types that check ranges, and the repair of prompt text that is not valid UTF-8.

``--temperature nan`` used to reach the request body as the invalid JSON constant ``NaN``, and
``--max-tokens -5`` was sent as it was; argparse now reports both as usage errors (exit 2).

Bytes that are not UTF-8 (a prompt piped from a Latin-1 file, say) arrive from the shell as lone
surrogates, which JSON servers such as llama.cpp reject. The policy: each bad byte becomes U+FFFD (the
replacement character) and a warning says so; the question is still asked.
"""

from __future__ import annotations

import warnings

from jarvis_core.commands import finite_float, positive_int

__all__ = ["finite_float", "positive_int", "repair_text"]




def repair_text(text: str, *, what: str = "the question") -> str:
    """``text`` with bytes that were not UTF-8 replaced by U+FFFD, and a warning when there were any."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    fixed = text.encode("utf-8", "surrogateescape" if _only_escapes(text) else "surrogatepass").decode("utf-8", "replace")
    bad = fixed.count("\ufffd") - text.count("\ufffd")
    warnings.warn(f"{what} holds {bad} byte(s) that are not UTF-8; each was replaced by U+FFFD", UserWarning,
                  stacklevel=2)
    return fixed


def _only_escapes(text: str) -> bool:
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)
