"""Every lazily exporting module shows its names to type checkers: read from the source with ``ast``, the
names in its lazy map, the names it imports under ``if TYPE_CHECKING:`` and its ``__all__`` are the same set,
and each name is imported from the module the lazy map loads it from.

Without the ``TYPE_CHECKING`` block a lazy name is ``Any`` to mypy (PEP 562 ``__getattr__`` returns ``Any``),
so a plugin author's subclass of ``PromptProvider`` or ``ToolParser`` is never checked against its contract.
``__all__`` must be a literal list, the only form mypy reads for re-exports. The modules are found by scanning
every package's source, so a new lazy module is checked without editing this file; a module-level
``__getattr__`` written by hand (not through ``jarvis_core.lazy.lazy_exports``) is refused, unless all it
serves is deprecated aliases (``jarvis_core.deprecation.module_getattr``).
"""

from __future__ import annotations

import ast
import pathlib
from typing import Dict, List, Optional, Set, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.glob("packages/*/src/**/*.py")) + sorted(ROOT.glob("examples/*/src/**/*.py"))


def module_getattr(tree: ast.Module) -> Optional[ast.stmt]:
    """The statement binding a module-level ``__getattr__``, if the module has one."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            return node
        if isinstance(node, ast.Assign):
            for target in node.targets:
                elements = target.elts if isinstance(target, ast.Tuple) else [target]
                if any(isinstance(e, ast.Name) and e.id == "__getattr__" for e in elements):
                    return node
    return None


def deprecated_aliases_only(node: ast.stmt) -> bool:
    """A ``def __getattr__`` that serves deprecated names through ``jarvis_core.deprecation.module_getattr``:
    those names are meant to stay out of sight (of ``__all__`` and type checkers alike)."""
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(n, ast.Name) and n.id == "module_getattr" for n in ast.walk(node))


def is_lazy(path: pathlib.Path) -> bool:
    node = module_getattr(ast.parse(path.read_text(encoding="utf-8")))
    return node is not None and not deprecated_aliases_only(node)


LAZY_MODULES = [path for path in SOURCES if is_lazy(path)]


def assigned(tree: ast.Module, name: str) -> ast.expr:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    raise AssertionError(f"no module-level assignment to {name}")


def lazy_map(tree: ast.Module) -> Dict[str, str]:
    """``{name: module}`` of the ``lazy_exports(__name__, MAP, globals())`` call that binds ``__getattr__``."""
    node = module_getattr(tree)
    assert isinstance(node, ast.Assign), "__getattr__ is written by hand; use jarvis_core.lazy.lazy_exports"
    call = node.value
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "lazy_exports", (
        "__getattr__ is not bound by jarvis_core.lazy.lazy_exports")
    table = call.args[1]
    if isinstance(table, ast.Name):
        table = assigned(tree, table.id)
    value = ast.literal_eval(table)
    assert isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    return value


def type_checking_imports(tree: ast.Module) -> List[Tuple[str, str]]:
    """``(name, module)`` for every ``from module import name`` under a module-level ``if TYPE_CHECKING:``."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.level == 0, (
                    f"line {statement.lineno}: only absolute `from module import name` under TYPE_CHECKING")
                for alias in statement.names:
                    found.append((alias.asname or alias.name, statement.module or ""))
    return found


def eager_names(tree: ast.Module) -> Set[str]:
    """Names bound at module level outside ``if TYPE_CHECKING:`` (imports, assignments, definitions)."""
    names: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def test_the_scan_finds_the_lazy_modules_of_several_distributions():
    found = {str(p.relative_to(ROOT)) for p in LAZY_MODULES}
    assert {
        "packages/jarvis-core/src/jarvis_core/__init__.py",
        "packages/jarvis-core/src/jarvis_core/prompts/__init__.py",
        "packages/jarvis-core/src/jarvis_core/parsers/__init__.py",
        "packages/jarvis-core/src/jarvis_core/defaults/__init__.py",
        "packages/jarvis-agents/src/jarvis_agents/sandbox/__init__.py",
        "packages/jarvis-engine-cloud/src/jarvis_engine_cloud/__init__.py",
    } <= found


@pytest.mark.parametrize("path", LAZY_MODULES, ids=lambda p: str(p.relative_to(ROOT / "packages")))
def test_lazy_names_are_imported_under_type_checking_and_listed_in_all(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy = lazy_map(tree)
    imported = type_checking_imports(tree)
    typed = dict(imported)
    assert len(typed) == len(imported), "a name is imported twice under TYPE_CHECKING"
    assert set(typed) == set(lazy), {
        "lazy but not under TYPE_CHECKING": sorted(set(lazy) - set(typed)),
        "under TYPE_CHECKING but not lazy": sorted(set(typed) - set(lazy)),
    }
    assert {n: m for n, m in typed.items() if lazy[n] != m} == {}, "imported from another module than it loads from"

    listed = assigned(tree, "__all__")
    assert isinstance(listed, ast.List), "__all__ must be a literal list (the form mypy reads)"
    all_names = ast.literal_eval(listed)
    assert len(all_names) == len(set(all_names)), "__all__ lists a name twice"
    eager = set(all_names) - set(lazy)
    assert set(lazy) <= set(all_names), sorted(set(lazy) - set(all_names))
    assert eager <= eager_names(tree), f"in __all__ but neither lazy nor defined: {sorted(eager - eager_names(tree))}"


def test_a_lazy_name_missing_from_type_checking_is_reported():
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "from jarvis_core.lazy import lazy_exports\n"
        "_LAZY = {'A': 'pkg.a', 'B': 'pkg.b'}\n"
        "__all__ = ['A', 'B']\n"
        "__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.a import A\n"
    )
    assert set(lazy_map(tree)) - set(dict(type_checking_imports(tree))) == {"B"}
