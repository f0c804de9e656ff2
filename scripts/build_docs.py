"""Assemble the documentation site's sources and build it with mkdocs in strict mode.

The Markdown stays where it is read on a repository browser (README.md, docs/, each package's README and
docs/, the examples' READMEs, benchmarks/HISTORY.md, CHANGELOG.md); this script copies it into
``.site-src/`` keeping each file's path, so every relative link resolves on the site exactly as it does in
the repository. Broken links, broken anchors and unresolved API references are warnings, and ``--strict``
makes any warning fail the build.

    python scripts/build_docs.py            # -> .site/

The navigation is mkdocs.yml's, completed from the tree: the Packages and Examples sections list every
package and example found, a page of docs/ that mkdocs.yml does not name is added to Reference under its
first heading, and CHANGELOG.md gets an entry; so a new page is on the site without an edit here.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = ["README.md", "CHANGELOG.md", "docs/**/*", "packages/*/README.md", "packages/*/docs/**/*",
           "examples/*/README.md", "benchmarks/HISTORY.md"]


def assemble(dest: pathlib.Path) -> int:
    if dest.exists():
        shutil.rmtree(dest)
    copied = 0
    for pattern in SOURCES:
        for src in sorted(ROOT.glob(pattern)):
            if src.is_file():
                target = dest / src.relative_to(ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)
                copied += 1
    return copied


def config_with_nav(path: pathlib.Path) -> pathlib.Path:
    """mkdocs.yml with its Packages and Examples sections made from the tree, written beside it."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    found = {
        "Packages": [{p.parent.name: str(p.relative_to(ROOT))} for p in sorted(ROOT.glob("packages/*/README.md"))],
        "Examples": [{p.parent.name: str(p.relative_to(ROOT))} for p in sorted(ROOT.glob("examples/*/README.md"))],
    }
    config["nav"] = [{k: found[k]} if isinstance(e, dict) and (k := next(iter(e))) in found else e
                     for e in config["nav"]]
    named = set(_pages(config["nav"]))
    reference = next(e["Reference"] for e in config["nav"] if isinstance(e, dict) and "Reference" in e)
    for page in sorted((ROOT / "docs").glob("*.md")):
        if str(page.relative_to(ROOT)) not in named:
            reference.append({_title(page): str(page.relative_to(ROOT))})
    if (ROOT / "CHANGELOG.md").exists() and "CHANGELOG.md" not in named:
        config["nav"].append({"Changelog": "CHANGELOG.md"})
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for e in nav for p in _pages(e)]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _pages(v)]
    return []


def _title(page: pathlib.Path) -> str:
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip().strip("`")
    return page.stem


def main() -> int:
    copied = assemble(ROOT / ".site-src")
    print(f"build_docs: {copied} files assembled in .site-src/")
    config = config_with_nav(ROOT / ".site-mkdocs.yml")
    return subprocess.call([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
