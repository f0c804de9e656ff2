"""What each kind of registered target must be, checked when the target is first loaded.

A wrong target (a parser without ``parse``, a tool without ``spec``, a command without
``add_parser``/``run``) is reported by :meth:`Registration.load` as a
:class:`~jarvis_core.errors.PluginError` naming the key, the plugin and its distribution, instead of failing
later somewhere inside the core. Engines are checked by :func:`jarvis_core.engine.engine_class` and config
schemas by the config loader, with the same kind of message.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from jarvis_core.errors import PluginError

__all__ = ["CONTRACTS", "built_problem", "contract_problem", "error_type", "rule_parser_problems"]


def _parser(target: Any, kind: str) -> Optional[str]:
    # Duck-typed on the one method every use needs: the base classes are the easy way, not the only one.
    missing = [name for name in ("parse",) if not callable(getattr(target, name, None))]
    if not missing or (callable(target) and not isinstance(target, type)):
        return None  # a parser class, or a factory (what it builds is used as a parser)
    base = "ToolParser" if kind == "tool" else "ReasoningParser"
    return f"has no {', '.join(missing)} method (subclass jarvis_core.parsers.{base})"


def _tool(target: Any) -> Optional[str]:
    from jarvis_core.tools.base import NO_SPEC, spec_problem
    from jarvis_core.types import ToolSpec

    spec = getattr(target, "spec", None)
    if isinstance(spec, ToolSpec):  # a class attribute: its schema is checked now, not on every call
        return spec_problem(spec)
    if spec is not None or callable(target):
        return None  # a class or factory: the tool it builds is checked by built_problem
    return NO_SPEC


def _command(target: Any) -> Optional[str]:
    missing = [name for name in ("add_parser", "run") if not callable(getattr(target, name, None))]
    if not missing:
        return None
    return f"has no {' or '.join(missing)}() (see jarvis_core.commands.CommandModule)"


def _agent(target: Any) -> Optional[str]:
    if not isinstance(target, type):
        return None  # a factory: what it builds is used as an agent
    from jarvis_core.agents.base import BaseAgent

    if issubclass(target, BaseAgent):
        return None
    return "is not a subclass of jarvis_core.agents.BaseAgent (which gives run, arun and astream)"


#: kind -> check(target, registration extra) returning a problem or ``None``.
CONTRACTS: Dict[str, Callable[[Any, Dict[str, Any]], Optional[str]]] = {
    "parser": lambda target, extra: _parser(target, str(extra.get("kind", "tool"))),
    "tool": lambda target, extra: _tool(target),
    "command": lambda target, extra: _command(target),
    "agent": lambda target, extra: _agent(target),
}


def built_problem(kind: str, obj: Any) -> Optional[str]:
    """What is wrong with the object a ``kind`` target built (``None``: nothing)."""
    if kind == "tool":
        from jarvis_core.tools.base import tool_problem

        problem = tool_problem(obj)
        return None if problem is None else f"built {type(obj).__name__!r}, which {problem}"
    if kind == "prompt_provider":
        from jarvis_core.prompts.provider import PromptProvider

        if not isinstance(obj, PromptProvider):
            return f"built {type(obj).__name__!r}, which is not a jarvis_core.prompts.PromptProvider"
    return None


def error_type(kind: str) -> type[PluginError]:
    """The :class:`PluginError` subclass that reports a broken ``kind`` target."""
    if kind == "tool":
        from jarvis_core.tools.base import InvalidToolError

        return InvalidToolError
    return PluginError


def rule_parser_problems(
    default_rules: Sequence[Tuple[str, Mapping[str, Any], str, str, str]], parser_keys: Iterable[str]
) -> List[str]:
    """Backend-default rules naming a parser nobody registered (checked per kind only when some parser of
    that kind is installed, so switching the core's parsers off does not flood the user)."""
    keys = set(parser_keys)
    out: List[str] = []
    for kind in ("tool", "reasoning"):
        known = sorted(k.partition(":")[2] for k in keys if k.startswith(kind + ":"))
        if not known:
            continue
        for pattern, fields, plugin, dist, version in default_rules:
            name = fields.get(f"{kind}_parser")
            if isinstance(name, str) and name not in ("none", "") and f"{kind}:{name}" not in keys:
                import difflib  # only when a rule names an unknown parser: every command builds the registry

                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; installed: {', '.join(known)}"
                out.append(
                    f"backend-default rule {pattern!r} from {f'{dist} {version}'.strip()} (plugin {plugin!r}) names "
                    f"{kind} parser "
                    f"{name!r}, which no installed plugin registers{hint}"
                )
    return out


def contract_problem(kind: str, target: Any, extra: Dict[str, Any]) -> Optional[str]:
    """What is wrong with ``target`` as a ``kind`` (``None``: nothing, or a kind with no check yet)."""
    check = CONTRACTS.get(kind)
    return check(target, extra) if check is not None else None
