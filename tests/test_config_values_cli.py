"""Values that are valid TOML but cannot work are reported by ``jarvis config show`` (file, key, line), and
an engine missing because ``JARVIS_LOAD_PLUGINS`` left its plugin out says so. Real ``jarvis`` processes."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Dict

import pytest


def _jarvis(*args: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jarvis_core.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def _env(tmp_path: pathlib.Path, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JARVIS_", "OLLAMA_", "LLAMACPP_", "VLLM_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))}
    env.update({"JARVIS_HOME": str(tmp_path / "home"), "PYTHONIOENCODING": "utf-8", **extra})
    return env


@pytest.mark.parametrize(("toml", "expected"), [
    ('[engine]\ndefault = "olama"\n',
     ":2: engine.default names 'olama', which is not an installed engine; installed: cloud, embedded"),
    ('[engine.ollama]\nhost = "http://[::1"\n',
     ":2: engine.ollama.host: unbalanced '[' in '[::1'"),
    ('[engine.vllm]\nhost = "http://[::1"\n',
     ":2: engine.vllm.host: invalid address 'http://[::1': unbalanced '['"),
    ('[engine.llamacpp]\nhost = "http://127.0.0.1:99999"\n',
     ":2: engine.llamacpp.host: invalid address 'http://127.0.0.1:99999': port 99999 is not between 1 and 65535"),
    ('[engine.ollama]\ntimeout = nan\n',
     ":2: invalid value for 'engine.ollama.timeout': timeout must be a number of seconds greater than 0"),
    ('[engine.vllm]\ntimeout = -1.0\n',
     ":2: invalid value for 'engine.vllm.timeout': timeout must be a number of seconds greater than 0"),
    ('[engine.cloud]\nmax_line_bytes = 0\n',
     ":2: invalid value for 'engine.cloud.max_line_bytes': max_line_bytes must be a whole number >= 1"),
    ('[engine.ollama]\nmax_connections = 0\n',
     ":2: invalid value for 'engine.ollama.max_connections': max_connections must be a whole number >= 1"),
    ('[engine.cloud]\nmax_keepalive_connections = -2\n',
     ":2: invalid value for 'engine.cloud.max_keepalive_connections': max_keepalive_connections must be a whole "
     "number >= 0"),
    ('[engine.cloud]\nmax_retries = -1\n',
     ":2: invalid value for 'engine.cloud.max_retries': max_retries must be a whole number >= 0, got -1"),
    ('[engine.embedded]\nslots = 0\n',
     ":2: invalid value for 'engine.embedded.slots': slots must be a whole number >= 1, got 0"),
    ('[engine.embedded]\nmodel_path = "m.gguf"\nstartup_timeout = nan\n',
     ":3: invalid value for 'engine.embedded.startup_timeout': startup_timeout must be a number of seconds greater "
     "than 0 (or inf for no limit), got nan"),
    ('[engine.embedded]\nstartup_timeout = -5\n',
     ":2: invalid value for 'engine.embedded.startup_timeout': startup_timeout must be a number of seconds greater "
     "than 0"),
    ('[engine.embedded]\nmax_tokens = -4\n',
     ":2: invalid value for 'engine.embedded.max_tokens': max_tokens must be a whole number >= 1, got -4"),
    ('[engine.embedded]\nctx_per_slot = 0\n',
     ":2: invalid value for 'engine.embedded.ctx_per_slot': ctx_per_slot must be a whole number >= 64, got 0"),
    ('[engine.embedded]\nthreads = 0\n',
     ":2: invalid value for 'engine.embedded.threads': threads must be a whole number >= 1, got 0"),
    ('[model_defaults."qwen3"]\ntemperature = nan\n',
     ":2: invalid value for 'model_defaults.qwen3.temperature': temperature must be a finite number >= 0, got nan"),
    ('[model_defaults."qwen3"]\ntop_p = 1.5\n',
     ":2: invalid value for 'model_defaults.qwen3.top_p': top_p must be a finite number from 0 to 1, got 1.5"),
    ('[model_defaults."qwen3"]\npresence_penalty = inf\n',
     ":2: invalid value for 'model_defaults.qwen3.presence_penalty': presence_penalty must be a finite number, "
     "got inf"),
    ('[engine.someone-elses]\ntimeout = nan\n',
     ":2: invalid value for 'engine.someone-elses.timeout': timeout must be a number of seconds greater than 0"),
    ('[agent]\nmax_turns = 0\n',
     ":2: invalid value for 'agent.max_turns': max_turns must be a whole number >= 1, got 0"),
])
def test_config_show_finds_values_that_cannot_work(tmp_path, toml, expected):
    config = tmp_path / "config.toml"
    config.write_text(toml, encoding="utf-8")
    proc = _jarvis("config", "show", env=_env(tmp_path, JARVIS_CONFIG=str(config)))
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("jarvis: error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"jarvis: error: {config}{expected}"), proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr


@pytest.mark.parametrize(("var", "value", "expected"), [
    ("LLAMACPP_HOST", "http://[::1", "$LLAMACPP_HOST: invalid address 'http://[::1': unbalanced '['"),
    ("OPENAI_BASE_URL", "http://[::1", "$OPENAI_BASE_URL: invalid address 'http://[::1': unbalanced '['"),
    ("GEMINI_BASE_URL", "http://127.0.0.1:70000",
     "$GEMINI_BASE_URL: invalid address 'http://127.0.0.1:70000': port 70000 is not between 1 and 65535"),
    ("OLLAMA_HOST", "http://127.0.0.1:99999",
     "$OLLAMA_HOST: invalid port '99999' in 'http://127.0.0.1:99999'; expected a number from 0 to 65535"),
])
def test_config_show_checks_addresses_from_the_environment(tmp_path, var, value, expected):
    proc = _jarvis("config", "show", env=_env(tmp_path, **{var: value}))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"jarvis: error: {expected}"), proc.stderr
    assert proc.stderr.endswith(" (set in the environment)\n") and proc.stderr.count("\n") == 1, proc.stderr


def test_addresses_the_engine_accepts_pass_from_the_file_and_the_environment(tmp_path):
    # Ollama reads ":11434" and "0.0.0.0" (its own OLLAMA_HOST forms); a cloud base URL set in the file
    # wins over a broken OPENAI_BASE_URL, which is then not used at all.
    config = tmp_path / "config.toml"
    config.write_text('[engine.ollama]\nhost = ":11434"\n[engine.cloud]\nopenai_base_url = "http://proxy:4000/v1"\n',
                      encoding="utf-8")
    proc = _jarvis("config", "show", env=_env(tmp_path, JARVIS_CONFIG=str(config), OPENAI_BASE_URL="http://[::1"))
    assert proc.returncode == 0, proc.stderr
    proc = _jarvis("config", "show", env=_env(tmp_path, OLLAMA_HOST="0.0.0.0"))
    assert proc.returncode == 0, proc.stderr


def test_default_engine_typo_gets_a_suggestion(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[engine]\ndefault = "olama"\n', encoding="utf-8")
    proc = _jarvis("config", "show", env=_env(tmp_path, JARVIS_CONFIG=str(config)))
    assert "(did you mean 'ollama'?)" in proc.stderr


def test_a_config_with_good_values_still_shows(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[engine]\ndefault = "ollama"\n[engine.ollama]\nhost = "http://[::1]:11434"\ndeadline = 600.0\n'
                      '[engine.embedded]\nslots = 2\nctx_per_slot = 64\nstartup_timeout = inf\n'
                      '[engine.cloud]\nmax_retries = 0\n[agent]\nmax_turns = 1\n'
                      '[model_defaults."qwen3"]\ntemperature = 0\ntop_p = 1.0\ntop_k = -1\npresence_penalty = -1.5\n',
                      encoding="utf-8")
    proc = _jarvis("config", "show", env=_env(tmp_path, JARVIS_CONFIG=str(config)))
    assert proc.returncode == 0, proc.stderr
    assert "deadline = 600.0" in proc.stdout and "max_retries = 0" in proc.stdout


def test_an_engine_left_out_by_load_plugins_says_so(tmp_path):
    proc = _jarvis("ask", "--engine", "ollama", "hi", env=_env(tmp_path, JARVIS_LOAD_PLUGINS=",,,"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("jarvis: error: unknown engine 'ollama'; available: none installed; ")
    assert "installed plugin(s) were left out by JARVIS_LOAD_PLUGINS / JARVIS_DISABLE_PLUGINS: " in proc.stderr
    assert "engine-ollama" in proc.stderr


def test_sigterm_free_commands_still_exit_normally(tmp_path):
    # The SIGTERM/SIGHUP handlers are installed only while a command runs and change no normal exit.
    proc = _jarvis("config", "path", env=_env(tmp_path))
    assert proc.returncode == 0 and proc.stdout.strip().endswith("config.toml")
