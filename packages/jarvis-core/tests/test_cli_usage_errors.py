"""Usage mistakes a command detects itself exit 2, like argparse's own, with one ``jarvis: error:`` line.

Each case runs the real ``jarvis`` console script in a subprocess, with an empty ``JARVIS_HOME`` and no
config file, so the exit status and the whole of stderr are what a user sees.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

JARVIS = pathlib.Path(sys.executable).parent / "jarvis"

CASES = [
    (["ask", ""], 'the question is empty: jarvis ask "your question"'),
    (["ask", "--timezone", "Europe/Paris", "what time is it?"],
     "--node-context, --timezone and --commands are read by a prompt provider; add --prompt-provider NAME"),
    (["ask", "--host", "http://127.0.0.1:9", "hi"],
     "--host needs --engine too: which kind of server runs there? (e.g. --engine ollama)"),
    (["models", "--host", "http://127.0.0.1:9"],
     "--host needs --engine too: which kind of server runs there? (e.g. --engine ollama)"),
    (["engines", "--timeout", "-1"], "--timeout must be a positive number of seconds"),
    (["models", "--timeout", "0"], "--timeout must be a positive number of seconds"),
    (["hardware", "--timeout", "0"], "--timeout must be a positive number of seconds"),
    (["defaults", " "], "MODEL is empty: give a model id such as 'qwen3:8b' or 'Qwen/Qwen3-8B' (or --gguf PATH)"),
]


def _env(home: pathlib.Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and not k.endswith("_HOST")}
    return {**env, "JARVIS_HOME": str(home), "NO_COLOR": "1"}


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(a) or "empty" for a, _ in CASES])
def test_usage_mistakes_exit_2_with_one_line(argv, message, tmp_path):
    proc = subprocess.run([str(JARVIS), *argv], capture_output=True, text=True, timeout=120, env=_env(tmp_path),
                          stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stderr) == (2, f"jarvis: error: {message}\n")
    assert proc.stdout == ""


def test_an_ordinary_error_still_exits_1(tmp_path):
    proc = subprocess.run([str(JARVIS), "engines", "no-such-engine"], capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr.startswith("jarvis: error: unknown engine 'no-such-engine'; available: ")

