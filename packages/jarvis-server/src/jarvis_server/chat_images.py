"""Content-part arrays holding images in a chat request: ``text`` and ``image_url`` parts become typed
parts (:mod:`jarvis_core.content`) that the engine maps to its own wire form, or refuses with
:class:`~jarvis_core.errors.VisionNotSupportedError` (a 400); an image is never dropped."""

from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from jarvis_core.content import ContentPart, part_from_openai
from jarvis_server.openai_errors import RequestError

__all__ = ["image_content"]


def image_content(content: List[Any], where: str) -> Tuple[ContentPart, ...]:
    """The parts of ``content`` (a list with at least one image part); a bad part is a 400 naming it."""
    parts: List[ContentPart] = []
    for j, part in enumerate(content):
        pwhere = f"{where}[{j}]"
        if not isinstance(part, Mapping):
            raise RequestError(f"{pwhere} must be an object", param=pwhere)
        try:
            parts.append(part_from_openai(part))
        except ValueError as exc:
            code = "unsupported_content" if part.get("type") not in ("text", "image_url") else "invalid_request"
            raise RequestError(f"{pwhere}: {exc}", param=pwhere, code=code) from None
    return tuple(parts)
