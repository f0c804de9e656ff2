"""The llama.cpp backend hook: defaults computed from what a local GGUF file says about itself.

Registered as a computed backend-default rule (:mod:`jarvis_core.defaults.hooks`) for the ``llamacpp`` and
``embedded`` engines and for an unknown backend (``jarvis defaults --gguf PATH``). It reads the file's
metadata with the ``gguf`` package from the llama.cpp project (the ``[embedded]`` extra) and returns:

- aliases: ``general.name`` and ``general.basename`` + ``general.size_label`` (``smollm2-135m``), so the
  declared family rules match the file whatever it is called on disk;
- extras: ``context_length`` (``<architecture>.context_length``, what the model was trained for; the embedded
  engine sizes its context from it), ``gguf_name``, ``gguf_architecture`` and ``chat_template`` (the template
  embedded in the file, when there is one).

Reading the header is not free (the ``gguf`` reader also decodes the tensor table and the whole vocabulary:
seconds for a small model), so the result is cached per file path, size and modification time, in the
process and on disk under ``$JARVIS_HOME/cache/gguf/`` (a changed file is read again).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any, Dict, Optional, Tuple

from jarvis_core.defaults.hooks import Computed, ModelInfo
from jarvis_core.errors import ConfigError

__all__ = ["from_gguf", "read_gguf_metadata"]

_KEYS = ("general.architecture", "general.name", "general.basename", "general.size_label",
         "tokenizer.chat_template")


def from_gguf(info: ModelInfo) -> Optional[Computed]:
    """The hook: ``None`` when no local GGUF file is known for the model."""
    path = info.path
    if not path or not path.lower().endswith(".gguf") or not os.path.isfile(path):
        return None
    meta = read_gguf_metadata(path)
    aliases = [meta.get("general.name") or ""]
    if meta.get("general.basename") and meta.get("general.size_label"):
        aliases.append(f"{meta['general.basename']}-{meta['general.size_label']}")
    extras: Dict[str, Any] = {"gguf_name": meta.get("general.name"), "gguf_architecture": meta.get("general.architecture"),
                              "context_length": meta.get("context_length"), "chat_template": meta.get("tokenizer.chat_template")}
    return Computed(aliases=tuple(a for a in aliases if a), extras={k: v for k, v in extras.items() if v is not None})


def read_gguf_metadata(path: str) -> Dict[str, Any]:
    """The metadata this hook uses, from the file at ``path`` (cached by path, size and mtime).

    :raises ConfigError: the ``gguf`` package is missing, or the file is not a readable GGUF.
    """
    st = os.stat(path)
    return dict(_read(os.path.abspath(path), st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=32)
def _read(path: str, size: int, mtime_ns: int) -> Tuple[Tuple[str, Any], ...]:
    from jarvis_core.config import jarvis_home

    cache = jarvis_home() / "cache" / "gguf" / (hashlib.sha256(f"{path}|{size}|{mtime_ns}".encode()).hexdigest() + ".json")
    try:
        return tuple(sorted(json.loads(cache.read_text(encoding="utf-8")).items()))
    except (OSError, ValueError, AttributeError):
        pass
    found = _read_file(path)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(found)), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only home only costs the next reader the same read
    return found


def _read_file(path: str) -> Tuple[Tuple[str, Any], ...]:
    try:
        import gguf
    except ImportError:
        raise ConfigError("reading a GGUF file's metadata needs the gguf package: pip install "
                          "'jarvis-engine-openai-compat[embedded]'", key="model_path") from None
    try:
        reader = gguf.GGUFReader(path, "r")
    except (ValueError, OSError, KeyError, IndexError) as exc:
        raise ConfigError(f"{path} is not a readable GGUF file ({type(exc).__name__}: {exc})", key="model_path") from None
    out: Dict[str, Any] = {}
    for key in _KEYS:
        field = reader.get_field(key)
        if field is not None:
            out[key] = field.contents()
    arch = out.get("general.architecture")
    ctx = reader.get_field(f"{arch}.context_length") if arch else None
    if ctx is not None:
        out["context_length"] = int(ctx.contents())
    return tuple(sorted(out.items()))
