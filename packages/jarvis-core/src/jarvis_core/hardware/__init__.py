"""What machine jarvis runs on, and which engine suits it.

::

    from jarvis_core.hardware import detect_hardware, recommend_engine

    hw = detect_hardware()          # runs nvidia-smi / rocm-smi / system_profiler, each with a timeout
    hw.gpus                         # (GPUInfo(vendor='nvidia', name='NVIDIA H100 80GB HBM3', memory_gb=79.6, count=8),)
    recommend_engine(hw)            # 'vllm'

Importing this package runs nothing; the parsers in :mod:`jarvis_core.hardware.parse` are pure functions.
"""

from jarvis_core.hardware.info import GPUInfo, HardwareInfo, group_gpus
from jarvis_core.hardware.probe import DEFAULT_TIMEOUT, detect_hardware, run_tool
from jarvis_core.hardware.recommend import (
    DATACENTER_NVIDIA,
    Recommendation,
    explain_recommendation,
    is_datacenter_nvidia,
    recommend_engine,
)

__all__ = [
    "DATACENTER_NVIDIA",
    "DEFAULT_TIMEOUT",
    "GPUInfo",
    "HardwareInfo",
    "Recommendation",
    "detect_hardware",
    "explain_recommendation",
    "group_gpus",
    "is_datacenter_nvidia",
    "recommend_engine",
    "run_tool",
]
