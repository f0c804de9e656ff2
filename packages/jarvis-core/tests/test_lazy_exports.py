"""Every name in the ``__all__`` of a lazily exporting core module resolves, in a fresh interpreter.

A lazy module (``jarvis_core.lazy.lazy_exports`` or a module-level ``__getattr__``) imports its names on
first access, so a typo in its table, or a name moved to another module, surfaces only when a user touches
it. The modules are found by scanning the source, so a new lazy module is checked without editing this file.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

import jarvis_core
from jarvis_core.lazy import lazy_exports

SRC = pathlib.Path(jarvis_core.__file__).resolve().parent
MODULE_GETATTR = re.compile(r"^(def __getattr__\(|__getattr__\b.*=)", re.MULTILINE)


def lazy_modules(package_dir: pathlib.Path, package: str) -> list:
    """Dotted names of the modules under ``package_dir`` that define a module-level ``__getattr__``."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        if MODULE_GETATTR.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(package_dir).with_suffix("").parts
            found.append(".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)]))
    return found


CORE_LAZY = lazy_modules(SRC, "jarvis_core")

# Resolve every exported name with nothing imported beforehand, so each goes through ``__getattr__``.
PROBE = """
import importlib, json, sys
module = importlib.import_module(sys.argv[1])
names = list(module.__all__)
problems = [f"{n}: listed twice" for n in sorted(set(names)) if names.count(n) > 1]
for name in names:
    try:
        getattr(module, name)
    except Exception as exc:
        problems.append(f"{name}: {type(exc).__name__}: {exc}")
missing_from_dir = sorted(set(names) - set(dir(module)))
print(json.dumps({"problems": problems, "missing_from_dir": missing_from_dir}))
"""


def test_the_scan_finds_the_known_lazy_modules():
    assert {"jarvis_core", "jarvis_core.agents", "jarvis_core.defaults", "jarvis_core.parsers", "jarvis_core.prompts",
            "jarvis_core.testing", "jarvis_core.tools"} <= set(CORE_LAZY)
    # A class-level __getattr__ (a proxy) is not a lazy module.
    assert "jarvis_core.instrumented" not in CORE_LAZY


@pytest.mark.parametrize("module", CORE_LAZY)
def test_every_name_in_all_resolves_in_a_fresh_interpreter(module):
    proc = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"problems": [], "missing_from_dir": []}


def test_an_unknown_name_is_an_attribute_error_naming_the_module():
    getattr_, dir_ = lazy_exports("pkg", {"Known": "json"}, {})
    with pytest.raises(AttributeError, match=r"^module 'pkg' has no attribute 'Nope'$"):
        getattr_("Nope")
    assert dir_() == ["Known"]
