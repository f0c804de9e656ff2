"""The tool-description compactor: tool schemas with the text a model can do without, to save prompt tokens.

Small models pay for every token of a tool list twice (prompt processing and attention), and most of a
schema's bytes are prose: the parameter descriptions and the format hints (``format``, ``pattern``,
``examples``, ``default``, …). :func:`compact_tools` keeps what a call needs (names, types, ``enum``,
``required``, nesting) and drops the rest on request. Providers use it for their compressed prompts and, in
native mode, for :meth:`~jarvis_core.prompts.PromptProvider.build_tools`.

The input is anything :func:`~jarvis_core.prompts.coerce_tools` takes; the output is plain OpenAI wrappers
(``{"type": "function", "function": {name, description?, parameters}}``) without Jarvis extras. The input is
never modified.
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, List, Mapping

from jarvis_core.prompts.context import coerce_tools

__all__ = ["FORMAT_HINTS", "compact_schema", "compact_tools"]

#: JSON-schema keys that only hint at a value's shape; a model fills the parameter without them.
FORMAT_HINTS: FrozenSet[str] = frozenset({
    "format", "pattern", "examples", "example", "default", "minLength", "maxLength", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "title",
    "$comment", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
})

#: Keys whose value maps names to schemas (the names are data, not keywords to drop).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
#: Keys whose value is one schema or a list of schemas.
_SCHEMA_VALUES = frozenset({"items", "additionalProperties", "not", "anyOf", "oneOf", "allOf", "prefixItems",
                            "if", "then", "else", "contains", "propertyNames"})


def compact_schema(schema: Any, *, descriptions: bool = False, format_hints: bool = False) -> Any:
    """A copy of a JSON schema without ``description`` (unless ``descriptions``) and without the
    :data:`FORMAT_HINTS` keys (unless ``format_hints``), at every level. Property *names* are kept even when
    a property is called ``description`` or ``format``."""
    if isinstance(schema, list):
        return [compact_schema(s, descriptions=descriptions, format_hints=format_hints) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: Dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and not descriptions:
            continue
        if key in FORMAT_HINTS and not format_hints:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: compact_schema(sub, descriptions=descriptions, format_hints=format_hints)
                        for name, sub in value.items()}
        elif key in _SCHEMA_VALUES:
            out[key] = compact_schema(value, descriptions=descriptions, format_hints=format_hints)
        else:
            out[key] = value
    return out


def compact_tools(
    tools: Any,
    *,
    tool_descriptions: bool = True,
    param_descriptions: bool = False,
    format_hints: bool = False,
) -> List[Dict[str, Any]]:
    """The tools as OpenAI wrappers with less text: each tool's own description kept unless
    ``tool_descriptions=False`` (it is how the model picks a tool), parameter descriptions dropped unless
    ``param_descriptions``, format hints dropped unless ``format_hints``."""
    out: List[Dict[str, Any]] = []
    for tool in coerce_tools(tools):
        fn = tool["function"]
        slim: Dict[str, Any] = {"name": fn["name"]}
        if tool_descriptions and fn.get("description"):
            slim["description"] = " ".join(str(fn["description"]).split())
        if "parameters" in fn:
            slim["parameters"] = compact_schema(fn["parameters"], descriptions=param_descriptions,
                                                format_hints=format_hints)
        out.append({"type": "function", "function": slim})
    return out
