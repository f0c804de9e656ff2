"""Structured output: the one ``response_format`` option every engine takes, and the decoded answer.

The request side is OpenAI's shape, whatever the engine (docs/contract.md §4)::

    {"type": "json_schema", "json_schema": {"name": "person", "schema": {...}, "strict": true}}
    {"type": "json_object"}
    {"type": "text"}                       # the default: no constraint

Each engine translates it to its wire form (Ollama ``format``, Gemini ``responseJsonSchema``, Anthropic's
forced tool, …) or raises :class:`~jarvis_core.errors.StructuredOutputNotSupportedError`. On the result side
:func:`with_parsed` puts the decoded object on :attr:`Completion.parsed <jarvis_core.types.Completion.parsed>`
(and on the last stream chunk), or raises :class:`~jarvis_core.errors.StructuredOutputError` when the text is
not JSON or does not validate, checked by the same validators as tool arguments
(:mod:`jarvis_core.tools.schema`).

:func:`response_format_for` builds the option from what users write: a JSON-schema dict, an attrs class
(its fields, through the same mapping as ``@tool`` signatures) or llm's concise form
(``"name, age int, bio: one sentence"``, see :func:`concise_schema`).
"""

from __future__ import annotations

import json
import re
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional

from jarvis_core.errors import InvalidOptionValueError, StructuredOutputError, UsageError
from jarvis_core.types import Completion, StreamChunk

__all__ = [
    "PARSE_ERROR",
    "RESPONSE_FORMAT_TYPES",
    "check_response_format",
    "concise_schema",
    "decode_structured",
    "json_schema_of",
    "parsed_stream",
    "response_format_for",
    "schema_of",
    "schema_name",
    "with_parsed",
]

#: The metadata key of a completion (or last chunk) whose text did not decode as the format asked.
PARSE_ERROR = "parse_error"
#: The ``type`` values of ``response_format``.
RESPONSE_FORMAT_TYPES = ("text", "json_object", "json_schema")

_CONCISE_TYPES = {"int": "integer", "float": "number", "str": "string", "bool": "boolean"}
_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def check_response_format(value: Any, *, engine_id: str = "") -> Optional[Dict[str, Any]]:
    """``value`` checked as a ``response_format``; ``None`` for ``{"type": "text"}`` (no constraint) or ``None``.

    :raises InvalidOptionValueError: not one of the three shapes, or a ``json_schema`` without a valid schema.
    """
    if value is None:
        return None

    def bad(why: str) -> InvalidOptionValueError:
        return InvalidOptionValueError(engine_id or "jarvis", "response_format", why, value=value)

    if not isinstance(value, Mapping) or value.get("type") not in RESPONSE_FORMAT_TYPES:
        raise bad("it must be {'type': 'json_schema', 'json_schema': {'name', 'schema'}}, {'type': 'json_object'} "
                  "or {'type': 'text'}")
    if value["type"] == "text":
        return None
    if value["type"] == "json_object":
        return {"type": "json_object"}
    spec = value.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
        raise bad("a json_schema response_format needs json_schema.schema (a JSON schema object)")
    from jarvis_core.tools.schema import schema_problem

    problem = schema_problem(dict(spec["schema"]))
    if problem:
        raise bad(f"its schema is not a valid JSON schema: {problem}")
    out = {"type": "json_schema", "json_schema": {**spec, "name": str(spec.get("name") or "response")}}
    return out


def schema_of(response_format: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """The JSON schema a (checked) ``response_format`` asks for; ``None`` for ``json_object`` or no format."""
    if not response_format or response_format.get("type") != "json_schema":
        return None
    return dict(response_format["json_schema"]["schema"])


def schema_name(response_format: Mapping[str, Any]) -> str:
    """The name of a ``json_schema`` format (``"response"`` when it has none): what engines that need one
    (Anthropic's forced tool) call it."""
    spec = response_format.get("json_schema") or {}
    return _NAME.sub("_", str(spec.get("name") or "response"))[:64] or "response"


def decode_structured(text: Optional[str], response_format: Optional[Mapping[str, Any]], *,
                      engine_id: str = "") -> Any:
    """The model's answer decoded as JSON and validated against the format's schema (if any).

    A code fence around the JSON (```` ```json … ``` ````), which small models add, is taken off.

    :raises StructuredOutputError: the text is not JSON, or the value breaks the schema.
    """
    raw = (text or "").strip()
    if raw.startswith("```"):
        raw = raw.split("\n", 1)[1] if "\n" in raw else ""
        raw = raw.rsplit("```", 1)[0].strip()
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise StructuredOutputError(
            f"{engine_id or 'the engine'}: the answer is not JSON ({exc.msg} at position {exc.pos}): {raw[:80]!r}",
            engine_id=engine_id, text=raw, problems=[exc.msg]) from None
    schema = schema_of(response_format)
    if schema is not None:
        from jarvis_core.tools.schema import validate

        problems = [p.replace("argument '", "field '").replace("the arguments", "the answer")
                    for p in validate(value, schema)]
        if problems:
            raise StructuredOutputError(
                f"{engine_id or 'the engine'}: the answer does not match the schema: {'; '.join(problems)}",
                engine_id=engine_id, text=raw, problems=problems)
    elif response_format is not None and not isinstance(value, dict):
        raise StructuredOutputError(f"{engine_id or 'the engine'}: json_object was asked for, the answer is a "
                                    f"JSON {type(value).__name__}", engine_id=engine_id, text=raw,
                                    problems=["not a JSON object"])
    return value


def with_parsed(completion: Completion, response_format: Optional[Mapping[str, Any]], *,
                engine_id: str = "", strict: bool = True) -> Completion:
    """``completion`` with :attr:`~jarvis_core.types.Completion.parsed` set from its text (unchanged when no
    JSON format was asked for, or when it is already set). A completion that ended in tool calls is left
    as it is. See :func:`decode_structured` for the errors; with ``strict=False`` (what engines do) a text
    that does not decode leaves ``parsed`` unset and says why in ``metadata["parse_error"]``."""
    if not response_format or response_format.get("type") == "text" or completion.parsed is not None \
            or completion.tool_calls:
        return completion
    import attrs

    try:
        return attrs.evolve(completion, parsed=decode_structured(completion.content, response_format,
                                                                 engine_id=engine_id))
    except StructuredOutputError as exc:
        if strict:
            raise
        return attrs.evolve(completion, metadata={**completion.metadata, PARSE_ERROR: str(exc)})


def json_schema_of(hint: Any) -> Dict[str, Any]:
    """The JSON schema of a Python type: an attrs class (its fields), ``list[X]``, ``dict[str, X]``, scalars,
    ``Literal``, enums (the mapping ``@tool`` signatures use)."""
    from jarvis_core.tools.signature import schema_for_type

    return schema_for_type(hint)


def concise_schema(text: str) -> Dict[str, Any]:
    """llm's concise schema form as a JSON schema: fields separated by commas (or newlines), each
    ``name [type][: description]`` with type ``int``, ``float``, ``str`` (default) or ``bool``::

        >>> concise_schema("name, age int, bio: one sentence")["properties"]["age"]
        {'type': 'integer'}

    :raises UsageError: an empty form or a field it cannot read.
    """
    separator = "\n" if "\n" in text.strip() else ","
    properties: Dict[str, Any] = {}
    for item in (i.strip() for i in text.split(separator)):
        if not item:
            continue
        head, _, description = item.partition(":")
        words = head.split()
        if not words or len(words) > 2 or (len(words) == 2 and words[1] not in _CONCISE_TYPES):
            raise UsageError(f"cannot read schema field {item!r}: write 'name', 'name type' or 'name type: description' "
                             f"(types: {', '.join(_CONCISE_TYPES)})", argument="schema")
        field: Dict[str, Any] = {"type": _CONCISE_TYPES[words[1] if len(words) == 2 else "str"]}
        if description.strip():
            field["description"] = description.strip()
        properties[words[0]] = field
    if not properties:
        raise UsageError("the schema names no field", argument="schema")
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def response_format_for(schema: Any, *, name: Optional[str] = None) -> Dict[str, Any]:
    """The ``response_format`` for ``schema``: a JSON-schema dict, a type (an attrs class, ``list[Person]``, …),
    llm's concise form as a string, or an existing ``response_format`` dict (passed through, checked).

    :raises UsageError: a schema of none of these kinds, or one that is not a valid JSON schema.
    """
    if isinstance(schema, Mapping) and schema.get("type") in RESPONSE_FORMAT_TYPES and (
            "json_schema" in schema or schema.get("type") != "json_schema") and "properties" not in schema:
        checked = check_response_format(schema)
        return checked or {"type": "text"}
    title: str
    if isinstance(schema, str):
        body, title = concise_schema(schema), name or "response"
    elif isinstance(schema, Mapping):
        body, title = dict(schema), name or str(schema.get("title") or "response")
    else:
        try:
            body = json_schema_of(schema)
        except TypeError as exc:
            raise UsageError(f"cannot make a JSON schema of {schema!r}: {exc}", argument="schema") from None
        title = name or str(getattr(schema, "__name__", "response"))
    from jarvis_core.tools.schema import schema_problem

    problem = schema_problem(body)
    if problem:
        raise UsageError(f"the schema is not a valid JSON schema: {problem}", argument="schema")
    return {"type": "json_schema", "json_schema": {"name": _NAME.sub("_", title)[:64] or "response", "schema": body}}



async def parsed_stream(chunks: AsyncIterator[StreamChunk], response_format: Mapping[str, Any], *,
                        engine_id: str = "", strict: bool = True) -> AsyncIterator[StreamChunk]:
    """``chunks`` with :attr:`~jarvis_core.types.StreamChunk.parsed` set on the last one, decoded from the whole
    text (each chunk is passed on one step late, so the last is known). A stream that ended in tool calls, or
    whose last chunk already carries it, is passed on unchanged. See :func:`decode_structured` for the errors,
    raised after the last content delta; with ``strict=False`` the last chunk's ``metadata["parse_error"]``
    says why instead."""
    held: Optional[StreamChunk] = None
    text: List[str] = []
    calls = False
    try:
        async for chunk in chunks:
            if held is not None:
                yield held
            held = chunk
            if chunk.content:
                text.append(chunk.content)
            calls = calls or bool(chunk.tool_calls)
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]
    if held is None:
        return
    if not calls and held.parsed is None:
        try:
            held = held.replace(parsed=decode_structured("".join(text), response_format, engine_id=engine_id))
        except StructuredOutputError as exc:
            if strict:
                raise
            held = held.replace(metadata={**held.metadata, PARSE_ERROR: str(exc)})
    yield held
