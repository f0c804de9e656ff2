"""``pythonic`` and ``llama4_pythonic``: a Python list of calls, ``[f(a='x', b=1), g(c=True)]``.

The output must open with ``[`` (Llama 4 may wrap it in ``<|python_start|>…<|python_end|>``). It is
parsed with :mod:`ast` and only literals are accepted as argument values (never evaluated as code):
``True``/``None`` become ``true``/``null``. Leading text, a non-literal value or a syntax error make the
whole output content.
"""

from __future__ import annotations

import ast
import json
from typing import List, Optional, Tuple

from jarvis_core.parsers.base import ParsedDelta
from jarvis_core.parsers.modes import LeadingParser, failed

__all__ = ["Llama4PythonicParser", "PythonicParser", "parse_call_list"]

START, END = "<|python_start|>", "<|python_end|>"


def _func_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _func_name(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def parse_call_list(text: str) -> Tuple[Optional[List[Tuple[str, str]]], str]:
    """``([(name, arguments JSON), …], "")`` or ``(None, reason)``. Never raises."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return None, f"not a Python call list ({type(exc).__name__})"
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None, "not a non-empty list"
    out = []
    for call in tree.body.elts:
        if not isinstance(call, ast.Call):
            return None, "list element is not a call"
        name = _func_name(call.func)
        if not name or call.args:
            return None, "call needs a plain name and keyword arguments only"
        args = {}
        for kw in call.keywords:
            if kw.arg is None:
                return None, "**kwargs are not allowed"
            try:
                args[kw.arg] = ast.literal_eval(kw.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None, f"argument {kw.arg!r} of {name!r} is not a literal"
        try:
            out.append((name, json.dumps(args, ensure_ascii=False)))
        except (TypeError, ValueError, RecursionError):
            return None, f"arguments of {name!r} are not JSON-serializable"
    return out, ""


class PythonicParser(LeadingParser):
    """``pythonic``."""

    name = "pythonic"
    openers: Tuple[str, ...] = ("[",)

    def _body(self, held: str) -> str:
        return held

    def _decide(self, held: str) -> List[ParsedDelta]:
        calls, reason = parse_call_list(self._body(held))
        if calls is None:
            return failed(held, "not_a_call_list", f"{reason}; output kept as content")
        return [ParsedDelta(tool_calls=tuple(self.calls.call(i, n, a) for i, (n, a) in enumerate(calls)))]


class Llama4PythonicParser(PythonicParser):
    """``llama4_pythonic``: the same list, optionally inside ``<|python_start|>…<|python_end|>``."""

    name = "llama4_pythonic"
    openers = ("[", START)

    def _body(self, held: str) -> str:
        body = held.strip()
        if body.startswith(START):
            body = body[len(START) :]
        return body.replace(END, "")
