"""The public plugin API (docs/contract.md §11) matches its checked-in snapshot, so every change is deliberate.

When this fails because you changed the public API on purpose: run
``python -m jarvis_core.testing.api_snapshot --write`` and add a changelog fragment under ``changes/``.
"""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import subprocess
import sys

import jarvis_core
from jarvis_core.testing import api_snapshot

SNAPSHOT = pathlib.Path(__file__).resolve().parents[1] / "api" / "public-api.txt"


def test_public_api_matches_the_snapshot():
    problem = api_snapshot.api_diff(SNAPSHOT.read_text(encoding="utf-8"), api_snapshot.snapshot(), path=str(SNAPSHOT))
    assert not problem, problem


def test_the_snapshot_covers_names_signatures_hooks_value_types_and_errors():
    text = SNAPSHOT.read_text(encoding="utf-8")
    for line in (
        "jarvis_core.Message -> jarvis_core.types.Message",
        "jarvis_core.hookspecs.jarvis_register_engines: hook(register: 'Register') -> 'None'",
        "jarvis_core.errors.PluginError: class(jarvis_core.errors.JarvisError)",
    ):
        assert any(have.startswith(line) for have in text.splitlines()), line
    assert "jarvis_core.types.Usage: attrs class(object)(prompt_tokens: 'int' = 0" in text
    assert "jarvis_core.engine.base.InferenceEngine.generate: def(self, messages:" in text


def _changed_signature(text: str) -> str:
    old = next(line for line in text.splitlines() if line.startswith("jarvis_core.engine.base.InferenceEngine.generate:"))
    return text.replace(old, old.replace("max_tokens: 'int' = 1024", "max_tokens: 'int' = 512"))


def test_a_changed_public_signature_fails_with_the_regeneration_command(tmp_path):
    modified = tmp_path / "public-api.txt"
    modified.write_text(_changed_signature(SNAPSHOT.read_text(encoding="utf-8")), encoding="utf-8")
    problem = api_snapshot.api_diff(modified.read_text(encoding="utf-8"), api_snapshot.snapshot(), path=str(modified))
    assert "-jarvis_core.engine.base.InferenceEngine.generate: def(self" in problem
    assert "max_tokens: 'int' = 512" in problem and "max_tokens: 'int' = 1024" in problem
    assert problem.endswith(
        "If the change is deliberate, regenerate the snapshot with `python -m jarvis_core.testing.api_snapshot --write` "
        "and add a changelog fragment under changes/ (e.g. changes/+name.removed.md: Added / Changed / Deprecated / "
        "Removed / Fixed; a removed or renamed name needs a deprecated alias first)."
    )

    # The command line says the same and exits 1; --write makes it agree again.
    check = [sys.executable, "-m", "jarvis_core.testing.api_snapshot", "--file", str(modified)]
    proc = subprocess.run(check, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "python -m jarvis_core.testing.api_snapshot --write" in proc.stderr
    written = subprocess.run([*check, "--write"], capture_output=True, text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    assert subprocess.run(check, capture_output=True, text=True, timeout=120).returncode == 0
    assert modified.read_text(encoding="utf-8") == SNAPSHOT.read_text(encoding="utf-8")


def test_a_removed_public_name_fails(tmp_path):
    text = SNAPSHOT.read_text(encoding="utf-8") + "jarvis_core.engine.streams.iter_gone: def(lines)\n"
    problem = api_snapshot.api_diff(text, api_snapshot.snapshot())
    assert "\n-jarvis_core.engine.streams.iter_gone: def(lines)\n" in problem


def test_the_version_in_the_code_is_the_distributions():
    assert jarvis_core.__version__ == importlib.metadata.version("jarvis-core")


def test_every_changelog_fragment_has_a_type_towncrier_knows():
    changes = pathlib.Path(__file__).resolve().parents[3] / "changes"
    names = [p.name for p in changes.iterdir() if p.name != ".gitignore"]
    bad = [n for n in names if not re.fullmatch(r"(\d+|\+[\w.-]+)\.(added|changed|deprecated|removed|fixed)\.md", n)]
    assert not bad, f"changes/ fragments must be <issue>.<type>.md or +<slug>.<type>.md (type: added, changed, " \
                    f"deprecated, removed, fixed); these are not: {bad}"
