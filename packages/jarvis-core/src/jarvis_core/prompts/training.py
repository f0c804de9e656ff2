"""Chat-format fine-tuning examples from ``(voice command, tool call)`` pairs, with a provider's training
methods: system = ``build_training_system_prompt()``, user = the command (with the provider's suffix, as at
inference), assistant = ``build_training_completion(tool_call)``.

Input is JSON Lines, one ``{"voice_command": "...", "tool_call": {"name": "...", "arguments": {...}}}`` per
line (``command`` is accepted for ``voice_command``). Blank lines are skipped; anything else that is not such
an object is a :class:`~jarvis_core.errors.JarvisError` naming the line.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Iterator, Mapping, Tuple

from jarvis_core.errors import JarvisError
from jarvis_core.prompts.jarvis_json import JarvisToolCall
from jarvis_core.prompts.provider import PromptProvider, append_suffix

__all__ = ["read_pairs", "training_example", "training_examples"]


def training_example(provider: PromptProvider, voice_command: str, tool_call: Mapping[str, Any]) -> Dict[str, Any]:
    """One example: ``{"messages": [system, user, assistant]}``."""
    return {"messages": [
        {"role": "system", "content": provider.build_training_system_prompt()},
        {"role": "user", "content": append_suffix(voice_command, provider.user_message_suffix)},
        {"role": "assistant", "content": provider.build_training_completion(dict(tool_call))},
    ]}


def read_pairs(lines: Iterable[str], *, source: str = "input") -> Iterator[Tuple[str, Dict[str, Any]]]:
    """``(voice command, tool call)`` from JSON Lines; bad lines raise a :class:`JarvisError` with the line number."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise JarvisError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise JarvisError(f"{where}: expected an object with 'voice_command' and 'tool_call'")
        command = obj.get("voice_command", obj.get("command"))
        if not isinstance(command, str) or not command.strip():
            raise JarvisError(f"{where}: 'voice_command' must be a non-empty string")
        call = obj.get("tool_call")
        if not isinstance(call, dict) or JarvisToolCall.from_object(call) is None:
            raise JarvisError(f"{where}: 'tool_call' must be an object with a 'name' and object 'arguments'")
        yield command.strip(), dict(call)


def training_examples(provider: PromptProvider, lines: Iterable[str], *, source: str = "input") -> Iterator[Dict[str, Any]]:
    """Every example of a JSON Lines input, in order."""
    for command, call in read_pairs(lines, source=source):
        yield training_example(provider, command, call)
