"""The engine plumbing stands below the tools and agents runtime: no module of ``jarvis_core.engine`` imports
``jarvis_core.tools``, ``.agents``, ``.prompts``, ``.sdk`` or ``.cli`` (the argument codec engines need lives
in ``jarvis_core.arguments``, next to the value types), and the old import path keeps working."""

from __future__ import annotations

import ast
import pathlib

import jarvis_core.engine
from jarvis_core.arguments import decode_arguments, json_type_name

ABOVE = ("jarvis_core.tools", "jarvis_core.agents", "jarvis_core.prompts", "jarvis_core.sdk", "jarvis_core.cli")


def test_no_engine_module_imports_the_layers_above():
    found = []
    for path in sorted(pathlib.Path(jarvis_core.engine.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.name}:{node.lineno} {n}" for n in names if n.startswith(ABOVE)]
    assert found == []


def test_the_codec_decodes_and_reports_and_the_old_path_is_the_same_function():
    from jarvis_core.tools import schema

    assert decode_arguments('{"a": 1}') == ({"a": 1}, "") and decode_arguments(" ") == ({}, "")
    assert decode_arguments("[1]") == (None, "the arguments must be a JSON object, got array")
    assert json_type_name(True) == "boolean"
    assert schema.decode_arguments is decode_arguments and schema.json_type_name is json_type_name
