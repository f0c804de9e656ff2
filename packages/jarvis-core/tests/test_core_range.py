"""``jarvis plugins``' check of the jarvis-core range a plugin declares agrees with packaging's specifiers (its
fast path for plain ranges included)."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from jarvis_core.cli.cmd_plugins import core_compatible

RANGES = ["<1,>=0.2", "<0.2,>=0.1", ">=0.2", ">=0.2.0,<1.0", "==0.2", "!=0.2.0", "*", "~=0.2", "<0.2.0", ">0.1.9",
          ">=1.0a1", "==0.2.*"]


@pytest.mark.parametrize("version", ["0.2.0", "0.1.0", "1.0.0", "0.2.1", "0.3", "1.0.0rc1"])
@pytest.mark.parametrize("requirement", RANGES)
def test_agrees_with_packaging(requirement, version):
    expected = SpecifierSet("" if requirement == "*" else requirement).contains(version, prereleases=True)
    assert core_compatible(requirement, version) is expected


def test_nothing_declared_or_unreadable_is_unknown():
    assert core_compatible("", "0.2.0") is None
    assert core_compatible(">=banana", "0.2.0") is None
