"""The ``jarvis ask`` arguments of the optional verbs: ``--schema`` (structured output) and ``-a`` (images).

``--schema`` takes a JSON file, a JSON schema written inline (``'{"type": "object", …}'``) or llm's concise
form (``'name, age int, bio: one sentence'``); ``-a``/``--attachment`` an image file or an ``https:``/``data:``
URL, once per image (llm's flag).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["add_verb_arguments", "question_with_images", "schema_format"]


def add_verb_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--schema`` and ``-a/--attachment`` to ``jarvis ask``."""
    g = p.add_argument_group("structured output and images")
    g.add_argument("--schema", metavar="FILE|SCHEMA",
                   help="answer as JSON valid against this schema: a JSON file, inline JSON, or the concise form "
                   "'name, age int, bio: one sentence'; the decoded object is printed")
    g.add_argument("-a", "--attachment", action="append", default=[], metavar="IMAGE",
                   help="an image file or URL sent with the question (repeat for more); the model must see images")


def schema_format(value: Optional[str]) -> Optional[Dict[str, Any]]:
    """The ``response_format`` of ``--schema`` (``None`` without it).

    :raises UsageError: an unreadable file, invalid JSON, or a schema that is not valid.
    """
    from jarvis_core.errors import UsageError
    from jarvis_core.structured import response_format_for

    if not value:
        return None
    text = value.strip()
    if text.lower().endswith(".json") or os.path.isfile(text):
        try:
            with open(text, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise UsageError(f"--schema {value}: cannot read it: {exc.strerror or exc}", argument="--schema") from None
        name = os.path.splitext(os.path.basename(value))[0]
    else:
        name = None
    if text.lstrip().startswith("{"):
        try:
            schema: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--schema: not valid JSON ({exc.msg} at line {exc.lineno})", argument="--schema") from None
    else:
        schema = text
    return response_format_for(schema, name=name)


def question_with_images(prompt: str, attachments: Sequence[str]) -> List[Any]:
    """The user message content of ``prompt`` with its images: parts, each file read here."""
    from jarvis_core.content import ImagePart, TextPart

    parts: List[Any] = [TextPart(prompt)]
    for item in attachments:
        if item.startswith(("http://", "https://", "data:")):
            parts.append(ImagePart(url=item))
        else:
            parts.append(ImagePart.from_path(item))
    return parts
