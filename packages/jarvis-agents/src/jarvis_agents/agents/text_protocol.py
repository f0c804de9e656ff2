"""Text tool protocols: ReAct (``Thought/Action/Action Input/Final Answer``) and OpenJarvis's
``THOUGHT/TOOL/INPUT/FINAL_ANSWER``, parsed the same way.

Parsing rules (a reply is model output: it never raises):

- Reasoning (``<think>…</think>``) is removed first, with the core's reasoning parser, so a "Final Answer"
  inside the thinking is never taken for the answer.
- An action beats everything after it: when the reply names an action, whatever the model wrote after
  its input (an invented ``Observation:``, a ``Final Answer:``) is dropped; the tool runs and its real result
  is the observation.
- Tool names are matched tolerantly: case, backticks, quotes, a trailing ``()`` and ``-``/``_``/spaces do
  not matter.
- The input is a JSON object, or, for a tool with exactly one required string parameter, plain text
  (``2+2`` for the calculator becomes ``{"expression": "2+2"}``).
"""

from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Sequence, Tuple

import attrs

from jarvis_core.types import ToolCall, ToolSpec, new_call_id

__all__ = ["OJ_TEXT", "REACT", "Parsed", "Protocol", "parse_reply", "render_tools", "strip_reasoning"]


@attrs.frozen
class Protocol:
    """The keywords of one text protocol."""

    name: str
    thought: str
    action: str
    action_input: str
    observation: str
    final: str

    @property
    def stop(self) -> List[str]:
        """Stop sequences: the model must not write the observation itself."""
        return [f"\n{self.observation}:", f"{self.observation}:"]


REACT = Protocol("react", "Thought", "Action", "Action Input", "Observation", "Final Answer")
OJ_TEXT = Protocol("text", "THOUGHT", "TOOL", "INPUT", "OBSERVATION", "FINAL_ANSWER")


@attrs.frozen
class Parsed:
    """A parsed reply: a tool ``call``, or the ``final`` answer, or neither (``problem`` says why).

    ``kept`` is the part of the reply that stays in the transcript (everything an action made moot is cut).
    ``action_seen`` tells a malformed action (the model tried; ``problem`` goes back as the observation) from
    a reply with no action and no answer at all.
    """

    kept: str
    call: Optional[ToolCall] = None
    final: Optional[str] = None
    problem: str = ""
    action_seen: bool = False


def strip_reasoning(text: str) -> str:
    """``text`` without ``<think>`` blocks (the core's ``think`` reasoning parser, tags only)."""
    if "<think>" not in text:
        # An end tag with no opening one (the template opened the thinking): what came before it was thinking.
        return text.rsplit("</think>", 1)[1] if "</think>" in text else text
    from jarvis_core.parsers.think import ThinkParser

    return ThinkParser(tags_only=True).parse(text).content or ""


def _label(keyword: str) -> str:
    # "Action Input" also matches "action input", "Action_Input", "ACTION INPUT" and "**Action Input**".
    words = [re.escape(w) for w in keyword.replace("_", " ").split()]
    return r"[*_]{0,2}" + r"[ _]+".join(words) + r"[*_]{0,2}\s*:[*_]{0,2}"


def _line_re(keyword: str) -> re.Pattern[str]:
    return re.compile(rf"(?im)^[ \t]*{_label(keyword)}[ \t]*")


def _normal(name: str) -> str:
    return re.sub(r"[\s_\-]+", "_", name.strip().lower())


def _match_tool(raw: str, specs: Sequence[ToolSpec]) -> Tuple[Optional[ToolSpec], str]:
    """The tool a raw action name means, and any argument text written inside ``name(...)``."""
    text = raw.strip().strip("`'\"*").strip()
    inline = ""
    paren = re.match(r"^([\w\-. ]+?)\s*\((.*)\)\s*$", text, re.S)
    if paren:
        text, inline = paren.group(1), paren.group(2).strip()
    text = text.strip("`'\"*. ")
    by_name = {_normal(s.name): s for s in specs}
    return by_name.get(_normal(text)), inline


def _single_string_param(spec: ToolSpec) -> Optional[str]:
    params = spec.parameters or {}
    required = list(params.get("required") or [])
    props = params.get("properties") or {}
    if len(required) == 1 and (props.get(required[0]) or {}).get("type") == "string":
        return str(required[0])
    return None


def _arguments(text: str, spec: ToolSpec) -> Optional[Dict[str, object]]:
    """The arguments written as ``text``, or ``None`` when they are neither JSON nor the plain text of a tool
    with one string argument."""
    text = text.strip().strip("`").strip()
    if text.lower().startswith("json"):
        text = text[4:].lstrip()
    if text.startswith("{"):
        try:
            value, _end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    single = _single_string_param(spec)
    if single is not None and text:
        first = text.splitlines()[0].strip() if not text.startswith("{") else text
        return {single: first.strip("'\"")}
    if not text and not (spec.parameters or {}).get("required"):
        return {}
    return None


def parse_reply(text: str, protocol: Protocol, specs: Sequence[ToolSpec]) -> Parsed:
    """Parse one reply of ``protocol``. Reasoning is stripped first."""
    text = strip_reasoning(text or "")
    action = _line_re(protocol.action).search(text)
    final = _line_re(protocol.final).search(text)
    if action is not None:
        # An action beats an answer written in the same turn, wherever it is: the answer cannot know the result.
        return _parse_action(text, action, protocol, specs)
    if final is not None:
        answer = text[final.end():]
        cut = _line_re(protocol.observation).search(answer)
        if cut:
            answer = answer[: cut.start()]
        return Parsed(kept=text[: final.end()] + answer, final=answer.strip())
    return Parsed(kept=text, problem=f"the reply has neither an {protocol.action}: line nor a {protocol.final}: line")


def _parse_action(text: str, action: re.Match[str], protocol: Protocol, specs: Sequence[ToolSpec]) -> Parsed:
    rest = text[action.end():]
    name_line, _, after = rest.partition("\n")
    spec, inline = _match_tool(name_line, specs)
    stops = [m.start() for kw in (protocol.observation, protocol.final, protocol.thought, protocol.action)
             if (m := _line_re(kw).search(after))]
    input_match = _line_re(protocol.action_input).search(after)
    if input_match is not None:
        body = after[input_match.end():]
        ends = [m.start() for kw in (protocol.observation, protocol.final, protocol.thought, protocol.action)
                if (m := _line_re(kw).search(body))]
        arg_text = body[: min(ends)] if ends else body
        kept_end = action.end() + len(name_line) + 1 + input_match.end() + len(arg_text)
    else:
        arg_text = inline
        kept_end = action.end() + len(name_line) + 1 + (min(stops) if stops else len(after))
    kept = text[:kept_end].rstrip()
    # A call the model got wrong still goes to the executor, whose message (unknown tool and the valid names,
    # or the schema violation) is the observation the model can act on.
    call_id = new_call_id()
    if spec is None:
        name = re.sub(r"\(.*$", "", name_line.strip().strip("`'\"*. ")).strip() or "?"
        args_text = arg_text.strip()
        return Parsed(kept=kept, call=ToolCall(call_id, name, args_text if args_text.startswith("{") else "{}"),
                      action_seen=True)
    args = _arguments(arg_text, spec)
    arguments = json.dumps(args, ensure_ascii=False) if args is not None else arg_text.strip() or "{}"
    return Parsed(kept=kept, call=ToolCall(call_id, spec.name, arguments), action_seen=True)


def render_tools(specs: Sequence[ToolSpec]) -> str:
    """The tool list of a text-protocol system prompt: name, description and argument schema."""
    if not specs:
        return "(no tools)"
    return "\n".join(
        f"- {s.name}: {s.description} Arguments (JSON): {json.dumps(dict(s.parameters.get('properties') or {}))}"
        for s in specs
    )
