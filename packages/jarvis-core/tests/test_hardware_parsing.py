"""Hardware parsing on captured tool outputs, and the engine recommendation's exact name matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis_core.hardware import (
    GPUInfo,
    HardwareInfo,
    explain_recommendation,
    group_gpus,
    is_datacenter_nvidia,
    recommend_engine,
)
from jarvis_core.hardware.parse import (
    parse_cpuinfo_model,
    parse_memory_size,
    parse_nvidia_smi,
    parse_rocm_smi,
    parse_system_profiler,
)

DATA = Path(__file__).parent / "data" / "hardware"


def _read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# -- NVIDIA --------------------------------------------------------------------------------------------


def test_nvidia_one_gpu():
    assert parse_nvidia_smi(_read("nvidia_smi_one_gpu.csv")) == [
        GPUInfo(vendor="nvidia", name="NVIDIA GeForce RTX 4090", memory_gb=24.0)
    ]


def test_nvidia_every_gpu_is_read_and_identical_ones_grouped():
    gpus = parse_nvidia_smi(_read("nvidia_smi_eight_h100.csv"))
    assert len(gpus) == 8  # OpenJarvis read only the first line
    grouped = group_gpus(gpus)
    assert grouped == (GPUInfo(vendor="nvidia", name="NVIDIA H100 80GB HBM3", memory_gb=79.6, count=8),)
    hw = HardwareInfo(platform="linux", gpus=grouped)
    assert hw.gpu_count == 8
    assert hw.gpu_memory_gb == pytest.approx(636.8)


def test_nvidia_mixed_gpus_keep_their_order():
    grouped = group_gpus(parse_nvidia_smi(_read("nvidia_smi_mixed.csv")))
    assert [(g.name, g.memory_gb, g.count) for g in grouped] == [
        ("NVIDIA GeForce RTX 3090", 24.0, 1),
        ("NVIDIA GeForce RTX 3060", 12.0, 1),
    ]


def test_nvidia_memory_not_available():
    assert parse_nvidia_smi(_read("nvidia_smi_memory_na.csv")) == [
        GPUInfo(vendor="nvidia", name="NVIDIA GB10", memory_gb=None)
    ]


@pytest.mark.parametrize("name", ["nvidia_smi_driver_error.txt", "nvidia_smi_no_devices.txt"])
def test_nvidia_messages_are_not_gpus(name):
    assert parse_nvidia_smi(_read(name)) == []


# -- AMD -----------------------------------------------------------------------------------------------


def test_rocm_text_with_banner_gives_the_card_series_not_the_banner():
    text = _read("rocm_smi_mi300x_x2.txt")
    assert "ROCm System Management Interface" in text  # the line OpenJarvis took for the GPU name
    gpus = parse_rocm_smi(text)
    assert gpus == [GPUInfo(vendor="amd", name="AMD Instinct MI300X", memory_gb=191.7)] * 2
    assert all("=" not in g.name and "ROCm" not in g.name for g in gpus)


def test_rocm5_lowercase_keys():
    assert parse_rocm_smi(_read("rocm_smi_rocm5_lowercase.txt")) == [
        GPUInfo(vendor="amd", name="Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]", memory_gb=16.0)
    ]


def test_rocm_json():
    assert parse_rocm_smi(_read("rocm_smi_rx7900xtx.json")) == [
        GPUInfo(vendor="amd", name="Navi 31 [Radeon RX 7900 XT/7900 XTX]", memory_gb=24.0)
    ]


def test_rocm_json_after_a_warning_line_and_hex_only_names():
    text = 'WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n' \
           '{"card1": {"Card Series": "0x73bf", "Device Name": "N/A"}, "card0": {"Card series": "Instinct MI210"}}'
    assert [g.name for g in parse_rocm_smi(text)] == ["Instinct MI210", "AMD GPU"]


def test_rocm_banner_only_output_has_no_gpu():
    banner = "\n".join(line for line in _read("rocm_smi_mi300x_x2.txt").splitlines() if line.startswith("="))
    assert parse_rocm_smi(banner) == []


# -- Apple and other Macs ------------------------------------------------------------------------------


def test_apple_silicon_is_unified_memory_not_ram_as_vram():
    assert parse_system_profiler(_read("system_profiler_m2_pro.json")) == [
        GPUInfo(vendor="apple", name="Apple M2 Pro", memory_gb=None, unified=True)
    ]


def test_intel_mac_with_two_gpus():
    assert parse_system_profiler(_read("system_profiler_intel_mac.json")) == [
        GPUInfo(vendor="intel", name="Intel UHD Graphics 630", memory_gb=None, unified=True),
        GPUInfo(vendor="amd", name="AMD Radeon Pro 5500M", memory_gb=4.0),
    ]


@pytest.mark.parametrize("text", [_read("system_profiler_none.json"), "", "not json", "[1, 2]", '{"SPDisplaysDataType": 3}'])
def test_system_profiler_without_gpus_or_garbage(text):
    assert parse_system_profiler(text) == []


@pytest.mark.parametrize(("text", "gib"), [("4 GB", 4.0), ("8192 MB", 8.0), ("1536 MB", 1.5), ("2 TB", 2048.0),
                                           ("lots", None), ("", None)])
def test_memory_sizes(text, gib):
    assert parse_memory_size(text) == gib


def test_cpuinfo_model():
    x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n"
    assert parse_cpuinfo_model(x86) == "AMD EPYC 7763 64-Core Processor"
    pi = "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n"
    assert parse_cpuinfo_model(pi) == "BCM2835"
    assert parse_cpuinfo_model("") == ""


# -- recommendation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA A10", "NVIDIA A10G", "NVIDIA A10-24Q", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe",
        "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA L40", "NVIDIA L40S", "NVIDIA L4",
        "NVIDIA A30", "NVIDIA A40", "NVIDIA GH200 480GB", "NVIDIA B200", "NVIDIA H800", "NVIDIA A800-SXM4-80GB",
    ],
)
def test_datacenter_names_match_as_whole_tokens(name):
    assert is_datacenter_nvidia(name)


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA RTX A1000 Laptop GPU", "NVIDIA RTX A1000", "NVIDIA RTX A4000", "NVIDIA RTX A6000",
        "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3060", "Tesla V100-SXM2-16GB", "Tesla T4", "NVIDIA GB10",
        "Quadro RTX 8000", "NVIDIA L40X", "NVIDIA A1000", "NVIDIA AA100",
    ],
)
def test_other_names_are_not_datacenter(name):
    assert not is_datacenter_nvidia(name)


def _hw(*gpus: GPUInfo, platform: str = "linux") -> HardwareInfo:
    return HardwareInfo(platform=platform, gpus=tuple(gpus))


@pytest.mark.parametrize(
    ("hw", "engine"),
    [
        (_hw(), "llamacpp"),
        (_hw(GPUInfo("apple", "Apple M2 Pro", unified=True), platform="darwin"), "ollama"),
        (_hw(GPUInfo("nvidia", "NVIDIA H100 80GB HBM3", 79.6, count=8)), "vllm"),
        (_hw(GPUInfo("nvidia", "NVIDIA A10", 22.5)), "vllm"),
        (_hw(GPUInfo("nvidia", "NVIDIA RTX A1000", 8.0)), "ollama"),
        (_hw(GPUInfo("nvidia", "NVIDIA GeForce RTX 4090", 24.0)), "ollama"),
        (_hw(GPUInfo("nvidia", "NVIDIA GeForce RTX 3090", 24.0), GPUInfo("nvidia", "NVIDIA A100-PCIE-40GB", 40.0)), "vllm"),
        (_hw(GPUInfo("amd", "AMD Instinct MI300X", 191.7)), "vllm"),
        (_hw(GPUInfo("amd", "Navi 31 [Radeon RX 7900 XT/7900 XTX]", 24.0)), "vllm"),
        (_hw(GPUInfo("intel", "Intel UHD Graphics 630", unified=True), GPUInfo("amd", "AMD Radeon Pro 5500M", 4.0),
             platform="darwin"), "ollama"),
        (_hw(GPUInfo("intel", "Intel Arc A770", 16.0)), "llamacpp"),
        (_hw(GPUInfo("other", "Moore Threads MTT S80", 16.0)), "llamacpp"),
    ],
)
def test_recommend_engine_decision_graph(hw, engine):
    assert recommend_engine(hw) == engine
    assert explain_recommendation(hw).reason


def test_recommendation_from_captured_outputs():
    assert recommend_engine(_hw(*group_gpus(parse_nvidia_smi(_read("nvidia_smi_a10g.csv"))))) == "vllm"
    assert recommend_engine(_hw(*group_gpus(parse_nvidia_smi(_read("nvidia_smi_one_gpu.csv"))))) == "ollama"
    assert recommend_engine(_hw(*parse_rocm_smi(_read("rocm_smi_mi300x_x2.txt")))) == "vllm"
    apple = parse_system_profiler(_read("system_profiler_m2_pro.json"))
    assert recommend_engine(_hw(*apple, platform="darwin")) == "ollama"
    assert recommend_engine(_hw(*parse_nvidia_smi(_read("nvidia_smi_no_devices.txt")))) == "llamacpp"
