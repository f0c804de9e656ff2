"""Message content as typed parts: text and images (docs/contract.md §3).

A :class:`~jarvis_core.types.Message`'s ``content`` is a plain ``str`` (the fast path: every text-only
message) or a tuple of parts: :class:`TextPart` and :class:`ImagePart`. An image comes from a URL
(``https:`` or a ``data:`` URL), from bytes with their media type, or from a local file that
:meth:`ImagePart.from_path` reads (the SDK and ``jarvis ask -a`` use it)::

    Message.user([TextPart("What is this?"), ImagePart.from_path("photo.png")])

Engines map parts to their wire form (OpenAI ``image_url`` parts, Ollama ``images``, Anthropic image sources,
Gemini ``inline_data``/``file_data``); an engine or model that cannot see raises
:class:`~jarvis_core.errors.VisionNotSupportedError`, never drops the image.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import attrs

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "MAX_IMAGE_BYTES",
    "ContentPart",
    "ImagePart",
    "TextPart",
    "any_images",
    "content_parts",
    "content_text",
    "has_images",
    "part_from_openai",
    "part_to_openai",
]

#: The image media types engines take (what OpenAI, Anthropic, Gemini and Ollama all accept).
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: The largest image file :meth:`ImagePart.from_path` reads (20 MiB, OpenAI's own limit per image).
MAX_IMAGE_BYTES = 20 * 1024 * 1024

_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
          (b"GIF89a", "image/gif"))


@attrs.frozen
class TextPart:
    """A piece of text in a message's content."""

    text: str


def _sniff(data: bytes) -> Optional[str]:
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@attrs.frozen
class ImagePart:
    """An image in a message's content: either ``url`` (``https:``/``http:`` or a ``data:`` URL) or ``data``
    (the image bytes) with ``media_type``. ``detail`` is OpenAI's hint (``auto``, ``low``, ``high``)."""

    url: Optional[str] = None
    data: Optional[bytes] = attrs.field(default=None, repr=lambda d: f"<{len(d)} bytes>" if d else "None")
    media_type: Optional[str] = None
    detail: Optional[str] = None

    def __attrs_post_init__(self) -> None:
        if (self.url is None) == (self.data is None):
            raise ValueError("an ImagePart takes exactly one of url= or data=")
        if self.data is not None and self.media_type not in IMAGE_MEDIA_TYPES:
            raise ValueError(f"an image's media_type must be one of {', '.join(IMAGE_MEDIA_TYPES)}, "
                             f"got {self.media_type!r}")

    @classmethod
    def from_bytes(cls, data: bytes, media_type: Optional[str] = None) -> ImagePart:
        """An image from its bytes; ``media_type`` defaults to what the bytes' signature says."""
        return cls(data=bytes(data), media_type=media_type or _sniff(data))

    @classmethod
    def from_path(cls, path: Union[str, os.PathLike[str]]) -> ImagePart:
        """An image read from a local file (at most :data:`MAX_IMAGE_BYTES`); the media type is the bytes'
        signature, else the file name's.

        :raises UsageError: the file is missing, too large or not an image of a known type.
        """
        from jarvis_core.errors import UsageError

        name = os.fspath(path)
        try:
            size = os.path.getsize(name)
            if size > MAX_IMAGE_BYTES:
                raise UsageError(f"image {name!r} is {size} bytes; the limit is {MAX_IMAGE_BYTES}", argument="attachment")
            with open(name, "rb") as fh:
                data = fh.read(MAX_IMAGE_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"cannot read image {name!r}: {exc.strerror or exc}", argument="attachment") from None
        media_type = _sniff(data) or mimetypes.guess_type(name)[0]
        if media_type not in IMAGE_MEDIA_TYPES:
            raise UsageError(f"{name!r} is not a PNG, JPEG, GIF or WebP image", argument="attachment")
        return cls(data=data, media_type=media_type)

    @property
    def is_data(self) -> bool:
        """True when the image is carried inline (bytes or a ``data:`` URL), not fetched from a URL."""
        return self.data is not None or bool(self.url and self.url.startswith("data:"))

    def inline(self) -> Tuple[str, bytes]:
        """``(media_type, bytes)`` of an inline image (bytes, or a base64 ``data:`` URL decoded).

        :raises ValueError: the image is a remote URL, or a malformed ``data:`` URL.
        """
        if self.data is not None:
            return str(self.media_type), self.data
        url = self.url or ""
        head, sep, payload = url.partition(",")
        if not url.startswith("data:") or not sep or not head.endswith(";base64"):
            raise ValueError("the image is not inline: a base64 data: URL or bytes are needed")
        media_type = head[5:-7] or "application/octet-stream"
        try:
            return media_type, base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the image's data: URL is not valid base64") from None

    def as_url(self) -> str:
        """The image as a URL: its own, or a base64 ``data:`` URL of its bytes."""
        if self.url is not None:
            return self.url
        return f"data:{self.media_type};base64,{base64.b64encode(self.data or b'').decode()}"


#: One part of a message's content.
ContentPart = Union[TextPart, ImagePart]


def content_parts(content: Any) -> Union[str, Tuple[ContentPart, ...], None]:
    """attrs converter of ``Message.content``: a str or ``None`` as is; any iterable of parts (or of
    OpenAI-style part dicts, or plain strings) as a tuple of parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return (part_from_openai(content),)
    out: List[ContentPart] = []
    for part in content:
        if isinstance(part, (TextPart, ImagePart)):
            out.append(part)
        elif isinstance(part, str):
            out.append(TextPart(part))
        elif isinstance(part, Mapping):
            out.append(part_from_openai(part))
        else:
            raise TypeError(f"a content part must be a TextPart, an ImagePart, a str or a dict, not {type(part).__name__}")
    return tuple(out)


def content_text(content: Union[str, Iterable[ContentPart], None]) -> Optional[str]:
    """The text of a content: a str as is, the text parts of a tuple joined (images left out)."""
    if content is None or isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart))


def has_images(content: Any) -> bool:
    """True when ``content`` (a str, parts, or OpenAI-style part dicts) holds an image."""
    if content is None or isinstance(content, str):
        return False
    return any(isinstance(p, ImagePart) or (isinstance(p, Mapping) and p.get("type") in ("image_url", "image"))
               for p in content)


def any_images(messages: Iterable[Any]) -> bool:
    """True when a message (a :class:`~jarvis_core.types.Message` or an OpenAI-style dict) holds an image in its
    content parts; what engines check before asking whether the model can see."""
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else getattr(m, "content", None)
        if content is not None and not isinstance(content, str) and has_images(content):
            return True
    return False


def part_to_openai(part: ContentPart) -> Dict[str, Any]:
    """A part as an OpenAI chat content part: ``{type: text, text}`` or ``{type: image_url, image_url: {url,
    detail?}}`` (bytes become a ``data:`` URL)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    image: Dict[str, Any] = {"url": part.as_url()}
    if part.detail:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def part_from_openai(raw: Mapping[str, Any]) -> ContentPart:
    """An OpenAI chat content part as a typed part.

    :raises ValueError: a part of another type (audio, files), or an ``image_url`` without a URL.
    """
    kind = raw.get("type")
    if kind == "text":
        text = raw.get("text")
        if not isinstance(text, str):
            raise ValueError("a text part needs a string 'text'")
        return TextPart(text)
    if kind == "image_url":
        image = raw.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        if not isinstance(url, str) or not url:
            raise ValueError("an image_url part needs image_url.url")
        detail = image.get("detail") if isinstance(image, Mapping) else None
        return ImagePart(url=url, detail=detail if isinstance(detail, str) else None)
    raise ValueError(f"content parts of type {kind!r} are not supported (only 'text' and 'image_url')")
