"""The layout of ``jarvis_server``, read from its source with :mod:`ast`: the imports between its modules
(module-level, function-level and ``TYPE_CHECKING`` ones alike) form no cycle, no module imports another's
private names, and only the application (``app.py``) imports a route module: routes route, and what they
share (responses, request bodies, wire models, the logic) lives in modules of its own."""

from __future__ import annotations

import ast
import graphlib
import pathlib
from typing import Dict, List, Set, Tuple

import jarvis_server

PACKAGE = "jarvis_server"
ROOT = pathlib.Path(jarvis_server.__file__).parent
#: The one module that composes the routes into the application.
COMPOSER = "jarvis_server.app"


def _modules() -> Dict[str, pathlib.Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join([PACKAGE, *parts])] = path
    return out


MODULES = _modules()


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str) -> List[Tuple[str, str]]:
    """``(imported module, name)`` for every import of a ``jarvis_server`` module in ``module`` (``name`` is
    the name taken from it, empty for a whole module)."""
    out: List[Tuple[str, str]] = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((a.name, "") for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package_of(module).split(".")
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            if base not in MODULES:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub, "") if sub in MODULES else (base, alias.name))
    return [(target, name) for target, name in out if target != module]


GRAPH: Dict[str, Set[str]] = {m: {t for t, _ in _imports(m)} for m in MODULES}


def _is_routes(module: str) -> bool:
    return "route" in module.rpartition(".")[2]


def test_the_modules_are_found():
    assert {COMPOSER, "jarvis_server.managed.service", "jarvis_server.openai_routes"} <= set(MODULES)
    assert any(_is_routes(m) for m in MODULES if m.startswith("jarvis_server.managed."))


def test_the_intra_package_imports_form_no_cycle():
    try:
        graphlib.TopologicalSorter(GRAPH).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def test_no_module_imports_another_modules_private_names():
    private = [f"{m} imports {name} from {target}" for m in MODULES for target, name in _imports(m)
               if name.startswith("_")]
    assert private == []


def test_only_the_application_imports_route_modules():
    wrong = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets
                   if _is_routes(t) and m != COMPOSER)
    assert wrong == []
