"""Image parts (:mod:`jarvis_core.content`) in the cloud providers' wire forms: Anthropic image sources
(``base64`` or ``url``) and Gemini parts (``inline_data`` for bytes and ``data:`` URLs, ``file_data`` for a
URL). OpenAI takes the ``image_url`` parts :func:`~jarvis_core.engine.messages.message_to_dict` writes."""

from __future__ import annotations

import base64
import mimetypes
from typing import Any, Dict, List

from jarvis_core.content import ImagePart
from jarvis_core.types import Message

__all__ = ["anthropic_user_content", "gemini_user_parts"]


def _inline(part: ImagePart) -> Any:
    try:
        media_type, data = part.inline()
    except ValueError:
        return None
    return media_type, base64.b64encode(data).decode("ascii")


def anthropic_user_content(msg: Message) -> Any:
    """A user message's ``content`` for Anthropic: its text, or text and image blocks when it has images."""
    if not msg.images:
        return msg.text or ""
    blocks: List[Dict[str, Any]] = []
    for part in msg.content if isinstance(msg.content, tuple) else ():
        if isinstance(part, ImagePart):
            inline = _inline(part)
            source = ({"type": "base64", "media_type": inline[0], "data": inline[1]} if inline
                      else {"type": "url", "url": part.url})
            blocks.append({"type": "image", "source": source})
        elif part.text:
            blocks.append({"type": "text", "text": part.text})
    return blocks


def gemini_user_parts(msg: Message) -> List[Dict[str, Any]]:
    """A user message's ``parts`` for Gemini: text parts, ``inline_data`` for image bytes, ``file_data`` for a URL."""
    if not msg.images:
        return [{"text": msg.text or ""}]
    parts: List[Dict[str, Any]] = []
    for part in msg.content if isinstance(msg.content, tuple) else ():
        if isinstance(part, ImagePart):
            inline = _inline(part)
            if inline:
                parts.append({"inline_data": {"mime_type": inline[0], "data": inline[1]}})
            else:
                mime = mimetypes.guess_type(part.url or "")[0] or "image/jpeg"
                parts.append({"file_data": {"mime_type": mime, "file_uri": part.url}})
        elif part.text:
            parts.append({"text": part.text})
    return parts
