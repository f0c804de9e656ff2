"""The public plugin API as text, and the check that it only changes on purpose.

The public API (``docs/contract.md`` §11) is every name in ``__all__`` of the modules in
:data:`PUBLIC_MODULES`: for a function its signature, for a class its constructor signature, bases and
public members (an attrs class's fields are its constructor's parameters), for a hook spec its signature
and pluggy options, for anything else its type. :func:`snapshot` renders it as sorted lines, one per item,
so a change reads as a small diff; ``packages/jarvis-core/api/public-api.txt`` is the checked-in copy.

Regenerate it, after a deliberate change, with::

    python -m jarvis_core.testing.api_snapshot --write

and add a changelog fragment saying what changed (``docs/contract.md`` §11). ``--check`` (the default)
compares without writing and exits 1 on a difference. Other projects can snapshot their own modules:
``python -m jarvis_core.testing.api_snapshot --file api.txt my_plugin my_plugin.engine``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence, Set, Tuple

__all__ = ["PUBLIC_MODULES", "REGENERATE", "api_diff", "default_snapshot_path", "snapshot"]

#: The modules whose ``__all__`` is jarvis-core's public plugin API.
PUBLIC_MODULES: Tuple[str, ...] = (
    "jarvis_core",
    "jarvis_core.agents",
    "jarvis_core.commands",
    "jarvis_core.config",
    "jarvis_core.content",
    "jarvis_core.defaults",
    "jarvis_core.discovery",
    "jarvis_core.embeddings",
    "jarvis_core.engine",
    "jarvis_core.engine.http",
    "jarvis_core.engine.messages",
    "jarvis_core.engine.openai_wire",
    "jarvis_core.engine.streams",
    "jarvis_core.errors",
    "jarvis_core.events",
    "jarvis_core.hardware",
    "jarvis_core.hookspecs",
    "jarvis_core.parsers",
    "jarvis_core.parsers.base",
    "jarvis_core.plugins",
    "jarvis_core.plugins.registry",
    "jarvis_core.prompts",
    "jarvis_core.prompts.blocks",
    "jarvis_core.prompts.output",
    "jarvis_core.sdk",
    "jarvis_core.stores",
    "jarvis_core.structured",
    "jarvis_core.testing",
    "jarvis_core.tools",
    "jarvis_core.types",
)

#: The one command that rewrites the checked-in snapshot.
REGENERATE = "python -m jarvis_core.testing.api_snapshot --write"

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_HOOK_OPTIONS = ("firstresult", "historic", "warn_on_impl")


class _Shown:
    """A default value shown by a fixed text (``repr`` of a set depends on the hash seed)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _stable(value: Any) -> _Shown:
    if isinstance(value, (set, frozenset)):
        return _Shown(f"{type(value).__name__}({{{', '.join(sorted(map(repr, value)))}}})")
    return _Shown(_ADDRESS.sub("", repr(value)))


def _signature(obj: Any) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = [p if p.default is p.empty else p.replace(default=_stable(p.default)) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params))


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"


def _is_ours(obj: Any, root: str) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == root or module.startswith(root + ".")


def _members(cls: type) -> Iterator[str]:
    """The public members a class defines itself (inherited ones are listed under the class defining them)."""
    fields = {a.name for a in getattr(cls, "__attrs_attrs__", ())}
    for name, value in sorted(vars(cls).items()):
        if name.startswith("_") and name not in ("__call__", "__aiter__", "__iter__"):
            continue
        if name in fields:
            continue  # an attrs field: the constructor's signature shows it
        where = f"{_qualname(cls)}.{name}:"
        if isinstance(value, (staticmethod, classmethod)):
            yield f"{where} {type(value).__name__} def{_signature(value.__func__)}"
        elif isinstance(value, property):
            yield f"{where} property"
        elif inspect.isfunction(value):
            yield f"{where} {_def(value)}{_signature(value)}"
        elif not inspect.isclass(value):
            yield f"{where} attribute"


def _def(func: Any) -> str:
    return "async def" if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func) else "def"


def _describe(obj: Any, root: str) -> Iterator[str]:
    """The lines for one exported object, at its defining name."""
    if inspect.isclass(obj):
        bases = ", ".join(_qualname(b) if _is_ours(b, root) else getattr(b, "__qualname__", "?") for b in obj.__bases__)
        kind = "attrs class" if hasattr(obj, "__attrs_attrs__") else "class"
        init = _signature(obj) if not issubclass(obj, BaseException) or "__init__" in vars(obj) else ""
        yield f"{_qualname(obj)}: {kind}({bases}){init}"
        yield from _members(obj)
    else:
        opts = _hook_options(obj)
        kind = _def(obj) if opts is None else "hook" + (f"[{', '.join(opts)}]" if opts else "")
        yield f"{_qualname(obj)}: {kind}{_signature(obj)}"


def _hook_options(func: Any) -> Optional[List[str]]:
    """A hook spec's pluggy options (``None``: not a hook spec; pluggy marks one ``<project>_spec``)."""
    if not inspect.isfunction(func):
        return None
    spec = next((v for k, v in vars(func).items() if k.endswith("_spec") and isinstance(v, dict)), None)
    if spec is None:
        return None
    return [opt for opt in _HOOK_OPTIONS if spec.get(opt)]


def snapshot(modules: Sequence[str] = PUBLIC_MODULES) -> str:
    """The public API of ``modules`` as text: the exported names (``module.name -> defining.name``, or
    ``module.name: type``), then one line per class, member, function and hook spec at its defining name;
    each block sorted."""
    root = modules[0].split(".")[0] if modules else ""
    exports: Set[str] = set()
    definitions: Set[str] = set()
    described: Set[str] = set()
    for module_name in modules:
        module = importlib.import_module(module_name)
        names = list(getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")])
        # Hook specs are the contract even when the module does not export them by name.
        names += [n for n, v in vars(module).items() if _hook_options(v) is not None and n not in names]
        for name in names:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                exports.add(f"{module_name}.{name}: {type(obj).__name__}")
                continue
            target = _qualname(obj)
            exports.add(f"{module_name}.{name} -> {target}")
            if target not in described and _is_ours(obj, root):
                described.add(target)
                definitions.update(_describe(obj, root))
    return "# exported names\n" + "".join(f"{line}\n" for line in sorted(exports)) + \
        "\n# definitions\n" + "".join(f"{line}\n" for line in sorted(definitions))


def api_diff(expected: str, actual: str, *, path: str = "public-api.txt") -> str:
    """A unified diff from the snapshot to the current API ('' when they agree), with what to do about it."""
    if expected == actual:
        return ""
    diff = "".join(difflib.unified_diff(
        expected.splitlines(keepends=True), actual.splitlines(keepends=True), f"{path} (snapshot)", "current API"))
    return (
        "The public plugin API changed (docs/contract.md §11):\n"
        f"{diff}\n"
        f"If the change is deliberate, regenerate the snapshot with `{REGENERATE}` and add a changelog fragment "
        "under changes/ (e.g. changes/+name.removed.md: Added / Changed / Deprecated / Removed / Fixed; a removed "
        "or renamed name needs a deprecated alias first)."
    )


def default_snapshot_path() -> Path:
    """``packages/jarvis-core/api/public-api.txt`` of the source checkout this jarvis_core was imported from."""
    return Path(__file__).resolve().parents[3] / "api" / "public-api.txt"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jarvis_core.testing.api_snapshot", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the snapshot file from the current API")
    mode.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference (the default)")
    parser.add_argument("--file", type=Path, default=None, help="the snapshot file (default: jarvis-core's own)")
    parser.add_argument("modules", nargs="*", help="modules to snapshot (default: jarvis-core's public modules)")
    args = parser.parse_args(argv)
    path: Path = args.file or default_snapshot_path()
    current = snapshot(tuple(args.modules) or PUBLIC_MODULES)
    if args.write:
        if not path.parent.is_dir():
            parser.error(f"{path.parent} does not exist (run from a source checkout, or pass --file)")
        path.write_text(current, encoding="utf-8")
        print(f"wrote {path} ({len(current.splitlines())} lines)")
        return 0
    try:
        expected = path.read_text(encoding="utf-8")
    except OSError as exc:
        parser.error(f"cannot read the snapshot {path}: {exc}")
    problem = api_diff(expected, current, path=str(path))
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    sys.exit(main())
