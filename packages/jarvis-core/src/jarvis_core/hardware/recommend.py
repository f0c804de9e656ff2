"""Which engine suits this machine: the decision graph of ``recommend_engine``.

::

    no GPU                      → llamacpp   (llama.cpp runs well on CPUs)
    Apple GPU                   → ollama     (Metal; so is any GPU on macOS: vLLM and ROCm do not run there)
    NVIDIA datacenter GPU       → vllm       (see DATACENTER_NVIDIA)
    other NVIDIA GPU            → ollama
    AMD GPU                     → vllm       (vLLM supports ROCm)
    anything else (Intel, …)    → llamacpp

With GPUs of several vendors, NVIDIA is considered first, then AMD.

Model names are matched by whole tokens, never substrings: the name is split at every character that is not
a letter or digit, so ``"NVIDIA A10"`` and ``"NVIDIA A10-24Q"`` contain the token ``A10`` while
``"NVIDIA RTX A1000"`` and ``"NVIDIA A100-SXM4-80GB"`` do not.
"""

from __future__ import annotations

import re
from typing import FrozenSet

import attrs

from jarvis_core.hardware.info import HardwareInfo

__all__ = ["DATACENTER_NVIDIA", "Recommendation", "explain_recommendation", "is_datacenter_nvidia", "recommend_engine"]

#: NVIDIA datacenter GPUs (name tokens) for which vLLM is recommended.
#:
#: The issue's list: A100, H100, H200, L40, A10, A30. Added, because they are the same datacenter families
#: and vLLM's usual targets: L40S and A40 (Ada/Ampere datacenter boards), A10G (AWS's A10), L4 (the Ada
#: inference card of cloud instances), A800, H800 and H20 (export variants of A100/H100/H200 silicon),
#: GH200 (Grace Hopper), and the Blackwell datacenter parts B100, B200, GB200, B300, GB300.
#: Left out on purpose: pre-Ampere cards (V100, T4, P100: no bf16, no FlashAttention 2, so Ollama is the
#: smoother default), workstation cards (RTX A1000…A6000, RTX PRO), GeForce, and GB10 (DGX Spark, a
#: desktop with unified memory).
DATACENTER_NVIDIA: FrozenSet[str] = frozenset(
    {
        "A100", "A800", "H100", "H800", "H200", "H20", "GH200",
        "L40", "L40S", "L4", "A10", "A10G", "A30", "A40",
        "B100", "B200", "GB200", "B300", "GB300",
    }
)


@attrs.frozen
class Recommendation:
    """An engine key and the reason, in words, for choosing it."""

    engine: str
    reason: str


def _tokens(name: str) -> FrozenSet[str]:
    return frozenset(t for t in re.split(r"[^A-Za-z0-9]+", name.upper()) if t)


def is_datacenter_nvidia(name: str) -> bool:
    """True when the GPU name contains a :data:`DATACENTER_NVIDIA` model as a whole token."""
    return bool(_tokens(name) & DATACENTER_NVIDIA)


def explain_recommendation(hw: HardwareInfo) -> Recommendation:
    """The recommended engine for ``hw`` and why (see the module docs for the decision graph)."""
    gpus = hw.gpus
    if not gpus:
        return Recommendation("llamacpp", "no GPU found: llama.cpp runs models on the CPU")
    apple = [g for g in gpus if g.vendor == "apple"]
    if apple:
        return Recommendation("ollama", f"Apple GPU ({apple[0].name}): Ollama uses Metal")
    nvidia = [g for g in gpus if g.vendor == "nvidia"]
    amd = [g for g in gpus if g.vendor == "amd"]
    if hw.platform == "darwin" and (nvidia or amd):
        return Recommendation("ollama", f"{(nvidia or amd)[0].name} on macOS: vLLM and ROCm do not run on macOS")
    if nvidia:
        datacenter = [g for g in nvidia if is_datacenter_nvidia(g.name)]
        if datacenter:
            return Recommendation("vllm", f"NVIDIA datacenter GPU ({datacenter[0].name}): vLLM serves it best")
        return Recommendation("ollama", f"NVIDIA GPU ({nvidia[0].name}) that is not a datacenter card: Ollama")
    if amd:
        return Recommendation("vllm", f"AMD GPU ({amd[0].name}): vLLM supports ROCm")
    return Recommendation("llamacpp", f"{gpus[0].name} is neither NVIDIA, AMD nor Apple: llama.cpp")


def recommend_engine(hw: HardwareInfo) -> str:
    """The registry key of the engine that suits ``hw`` best: ``llamacpp``, ``ollama`` or ``vllm``."""
    return explain_recommendation(hw).engine
