"""Value types describing the machine: :class:`GPUInfo` and :class:`HardwareInfo`."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Tuple

import attrs

__all__ = ["GPUInfo", "HardwareInfo", "group_gpus"]

#: Vendors :class:`GPUInfo` knows; anything else is ``"other"``.
VENDORS = ("nvidia", "amd", "apple", "intel", "other")


@attrs.frozen
class GPUInfo:
    """``count`` identical GPUs.

    :param vendor: ``"nvidia"``, ``"amd"``, ``"apple"``, ``"intel"`` or ``"other"``.
    :param name: the product name the vendor tool reports (``"NVIDIA H100 80GB HBM3"``).
    :param memory_gb: memory of one GPU in GiB; ``None`` when unknown or shared with the CPU.
    :param count: how many such GPUs the machine has.
    :param unified: the GPU shares system RAM (Apple silicon): see :attr:`HardwareInfo.ram_gb`.
    """

    vendor: str
    name: str
    memory_gb: Optional[float] = None
    count: int = 1
    unified: bool = False

    def to_dict(self) -> Dict[str, Any]:
        """Plain data for JSON."""
        return attrs.asdict(self)


@attrs.frozen
class HardwareInfo:
    """What :func:`~jarvis_core.hardware.detect_hardware` found.

    ``notes`` records probes that failed in a way worth knowing (a vendor tool that timed out or could not
    talk to its driver); a tool that is simply not installed is not a note.
    """

    platform: str
    machine: str = ""
    cpu_name: str = ""
    cpu_cores: Optional[int] = None
    cpu_threads: Optional[int] = None
    ram_gb: float = 0.0
    gpus: Tuple[GPUInfo, ...] = ()
    notes: Tuple[str, ...] = ()

    @property
    def gpu_count(self) -> int:
        """Total number of GPUs."""
        return sum(g.count for g in self.gpus)

    @property
    def gpu_memory_gb(self) -> Optional[float]:
        """Total dedicated GPU memory in GiB, or ``None`` when no GPU reports its own memory."""
        sizes = [g.memory_gb * g.count for g in self.gpus if g.memory_gb is not None]
        return round(sum(sizes), 1) if sizes else None

    def to_dict(self) -> Dict[str, Any]:
        """Plain data for JSON (``jarvis hardware``)."""
        return {
            "platform": self.platform,
            "machine": self.machine,
            "cpu": {"name": self.cpu_name, "cores": self.cpu_cores, "threads": self.cpu_threads},
            "ram_gb": self.ram_gb,
            "gpus": [g.to_dict() for g in self.gpus],
            "gpu_count": self.gpu_count,
            "gpu_memory_gb": self.gpu_memory_gb,
            "notes": list(self.notes),
        }


def group_gpus(gpus: Iterable[GPUInfo]) -> Tuple[GPUInfo, ...]:
    """Merge identical GPUs (vendor, name, memory) into one entry with a ``count``, keeping first-seen order."""
    order: Dict[Tuple[str, str, Optional[float], bool], int] = {}
    for gpu in gpus:
        key = (gpu.vendor, gpu.name, gpu.memory_gb, gpu.unified)
        order[key] = order.get(key, 0) + gpu.count
    return tuple(GPUInfo(vendor=v, name=n, memory_gb=m, count=c, unified=u) for (v, n, m, u), c in order.items())
