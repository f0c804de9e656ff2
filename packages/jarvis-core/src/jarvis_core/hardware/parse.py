"""Pure parsers for the outputs of nvidia-smi, rocm-smi, system_profiler and /proc/cpuinfo.

Each takes the text a tool printed and returns what it describes; none runs anything, and none raises on
odd output (an unrecognisable line is skipped). They are tested on captured outputs
(``tests/data/hardware``).
"""

from __future__ import annotations

import json
import re
from typing import Dict, List, Optional

from jarvis_core.hardware.info import GPUInfo

__all__ = [
    "NVIDIA_QUERY",
    "ROCM_QUERY",
    "SYSTEM_PROFILER_QUERY",
    "parse_cpuinfo_model",
    "parse_memory_size",
    "parse_nvidia_smi",
    "parse_rocm_smi",
    "parse_system_profiler",
    "vendor_of",
]

#: The command lines whose outputs the parsers understand.
NVIDIA_QUERY = ("nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits")
ROCM_QUERY = ("rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json")
SYSTEM_PROFILER_QUERY = ("system_profiler", "-json", "SPDisplaysDataType")

_GIB = 1024**3
_ROCM_LINE = re.compile(r"^\s*(?:GPU|HCU)\[(\d+)\]\s*:\s*(.+?):\s*(.*?)\s*$")
_UNKNOWN = {"", "N/A", "[N/A]", "UNKNOWN", "UNSUPPORTED", "[NOT SUPPORTED]", "NOT SUPPORTED"}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B)\s*$", re.IGNORECASE)


def _gib(value: float) -> float:
    return round(value, 1)


def vendor_of(name: str) -> str:
    """Guess the vendor from a product or vendor name: ``nvidia``, ``amd``, ``apple``, ``intel`` or ``other``."""
    lowered = name.lower()
    tokens = set(re.split(r"[^a-z0-9]+", lowered))
    if "nvidia" in tokens or "geforce" in tokens or "quadro" in tokens or "tesla" in tokens:
        return "nvidia"
    if "amd" in tokens or "ati" in tokens or "radeon" in tokens or "instinct" in tokens:
        return "amd"
    if "apple" in tokens:
        return "apple"
    if "intel" in tokens:
        return "intel"
    return "other"


# -- NVIDIA --------------------------------------------------------------------------------------------


def parse_nvidia_smi(text: str) -> List[GPUInfo]:
    """One :class:`GPUInfo` per GPU line of ``nvidia-smi --query-gpu=name,memory.total
    --format=csv,noheader,nounits`` (memory in MiB; ``[N/A]`` → unknown). Messages such as "No devices
    were found" contain no GPU line and give an empty list."""
    gpus: List[GPUInfo] = []
    for line in text.splitlines():
        if "," not in line:
            continue
        name, _, memory = line.rpartition(",")
        name = name.strip()
        if not name or name.upper() in _UNKNOWN:
            continue
        mib = _number(memory)
        if mib is None and memory.strip().upper() not in _UNKNOWN:
            continue  # not a GPU line (a warning that happens to contain a comma)
        gpus.append(GPUInfo(vendor="nvidia", name=name, memory_gb=_gib(mib / 1024) if mib is not None else None))
    return gpus


def _number(text: str) -> Optional[float]:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


# -- AMD -----------------------------------------------------------------------------------------------


def parse_rocm_smi(text: str) -> List[GPUInfo]:
    """GPUs from ``rocm-smi --showproductname --showmeminfo vram``, as JSON (``--json``) or as text.

    The name is the ``Card Series`` field (``Device Name`` or a non-numeric ``Card Model`` as fallbacks),
    never one of the banner lines (``==== ROCm System Management Interface ====``) that surround it.
    Keys are matched case-insensitively: ROCm 5 writes ``Card series``, ROCm 6 ``Card Series``.
    """
    cards = _rocm_json_cards(text)
    if cards is None:
        cards = _rocm_text_cards(text)
    gpus: List[GPUInfo] = []
    for _, fields in sorted(cards.items()):
        total = _number(fields.get("vram total memory (b)", ""))
        gpus.append(GPUInfo(vendor="amd", name=_amd_name(fields), memory_gb=_gib(total / _GIB) if total else None))
    return gpus


def _rocm_json_cards(text: str) -> Optional[Dict[int, Dict[str, str]]]:
    start = text.find("{")
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    cards: Dict[int, Dict[str, str]] = {}
    for key, value in data.items():
        match = re.fullmatch(r"card(\d+)", str(key).strip().lower())
        if match and isinstance(value, dict):
            cards[int(match.group(1))] = {str(k).strip().lower(): str(v).strip() for k, v in value.items()}
    return cards


def _rocm_text_cards(text: str) -> Dict[int, Dict[str, str]]:
    cards: Dict[int, Dict[str, str]] = {}
    for line in text.splitlines():
        match = _ROCM_LINE.match(line)
        if match:
            index, key, value = match.groups()
            cards.setdefault(int(index), {})[key.strip().lower()] = value
    return cards


def _amd_name(fields: Dict[str, str]) -> str:
    for key in ("card series", "device name", "marketing name", "card model"):
        value = fields.get(key, "").strip()
        if value and value.upper() not in _UNKNOWN and not re.fullmatch(r"0x[0-9a-fA-F]+", value):
            return value
    return "AMD GPU"


# -- Apple (and other Macs) ---------------------------------------------------------------------------


def parse_system_profiler(text: str) -> List[GPUInfo]:
    """GPUs from ``system_profiler -json SPDisplaysDataType``.

    Apple-silicon GPUs share system RAM: ``memory_gb`` is ``None`` and ``unified`` is true (reporting the
    whole RAM as VRAM, as OpenJarvis did, overstates what a model may use). Discrete GPUs of Intel Macs
    report ``spdisplays_vram``.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return []
    entries = data.get("SPDisplaysDataType") if isinstance(data, dict) else None
    gpus: List[GPUInfo] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("sppci_model") or "").strip()
        if not name:
            raw = str(entry.get("_name") or "").strip()
            name = "" if raw.startswith("kHW_") else raw
        if not name:
            continue
        vendor = _mac_vendor(str(entry.get("spdisplays_vendor") or ""), name)
        dedicated = parse_memory_size(str(entry.get("spdisplays_vram") or ""))
        unified = vendor == "apple" or (dedicated is None and "spdisplays_vram_shared" in entry)
        gpus.append(GPUInfo(vendor=vendor, name=name, memory_gb=None if unified else dedicated, unified=unified))
    return gpus


def _mac_vendor(raw: str, name: str) -> str:
    # Newer macOS writes "sppci_vendor_Apple" / "sppci_vendor_amd"; older "AMD (0x1002)" or "Intel".
    cleaned = raw.lower().replace("sppci_vendor_", " ")
    vendor = vendor_of(cleaned)
    return vendor if vendor != "other" else vendor_of(name)


def parse_memory_size(text: str) -> Optional[float]:
    """``"4 GB"`` → 4.0, ``"1536 MB"`` → 1.5 (GiB, as macOS means it); ``None`` if unparseable."""
    match = _SIZE.match(text)
    if not match:
        return None
    value = float(match.group(1))
    unit = match.group(2).upper().replace("I", "")
    factor = {"KB": 1 / 1024**2, "MB": 1 / 1024, "GB": 1.0, "TB": 1024.0}[unit]
    return _gib(value * factor)


# -- CPU -----------------------------------------------------------------------------------------------


def parse_cpuinfo_model(text: str) -> str:
    """The CPU model from Linux ``/proc/cpuinfo`` (``model name``; ``Model`` on some ARM boards)."""
    fallback = ""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "model name" and value.strip():
            return value.strip()
        if key in ("model", "hardware", "cpu model") and value.strip() and not value.strip().isdigit():
            fallback = fallback or value.strip()
    return fallback
