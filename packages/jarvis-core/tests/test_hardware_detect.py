"""detect_hardware runs the real vendor tools: here, stand-in executables on PATH that print captured outputs."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jarvis_core.cli.main import main
from jarvis_core.hardware import detect_hardware, run_tool

pytestmark = pytest.mark.skipif(os.name != "posix", reason="stand-in tools are POSIX scripts")

DATA = Path(__file__).parent / "data" / "hardware"


def _tool(bin_dir: Path, name: str, body: str) -> Path:
    """An executable ``name`` in ``bin_dir`` running ``body`` (Python) with this interpreter."""
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body), encoding="utf-8")
    path.chmod(0o755)
    return path


def _printing(bin_dir: Path, name: str, capture: str, status: int = 0) -> Path:
    return _tool(
        bin_dir, name,
        f"""
        import sys
        sys.stdout.write(open({str(DATA / capture)!r}, encoding="utf-8").read())
        sys.exit({status})
        """,
    )


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    path = tmp_path / "bin"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))  # only our stand-ins exist
    return path


def test_no_tools_means_no_gpu_and_no_notes(bin_dir):
    hw = detect_hardware(platform="linux")
    assert hw.gpus == ()
    assert hw.notes == ()
    assert hw.ram_gb > 0
    assert hw.cpu_threads and hw.cpu_threads >= 1
    assert hw.platform == "linux"


def test_every_nvidia_gpu_and_amd_gpus_are_found(bin_dir):
    _printing(bin_dir, "nvidia-smi", "nvidia_smi_eight_h100.csv")
    _printing(bin_dir, "rocm-smi", "rocm_smi_rx7900xtx.json")
    hw = detect_hardware(platform="linux")
    assert [(g.vendor, g.name, g.count) for g in hw.gpus] == [
        ("nvidia", "NVIDIA H100 80GB HBM3", 8),
        ("amd", "Navi 31 [Radeon RX 7900 XT/7900 XTX]", 1),
    ]
    assert hw.notes == ()


def test_tool_arguments_are_the_ones_the_parsers_expect(bin_dir, tmp_path):
    log = tmp_path / "argv.txt"
    _tool(bin_dir, "nvidia-smi", f"import sys\nopen({str(log)!r}, 'w').write(' '.join(sys.argv[1:]))\n")
    detect_hardware(platform="linux")
    assert log.read_text() == "--query-gpu=name,memory.total --format=csv,noheader,nounits"


def test_driver_failure_is_a_note_not_a_gpu(bin_dir):
    _printing(bin_dir, "nvidia-smi", "nvidia_smi_driver_error.txt", status=9)
    hw = detect_hardware(platform="linux")
    assert hw.gpus == ()
    assert len(hw.notes) == 1
    assert "nvidia-smi exited with status 9" in hw.notes[0]
    assert "couldn't communicate with the NVIDIA driver" in hw.notes[0]


def test_macos_uses_system_profiler(bin_dir):
    _printing(bin_dir, "system_profiler", "system_profiler_m2_pro.json")
    _printing(bin_dir, "nvidia-smi", "nvidia_smi_one_gpu.csv")  # not consulted on macOS
    hw = detect_hardware(platform="darwin")
    assert [(g.vendor, g.name, g.unified) for g in hw.gpus] == [("apple", "Apple M2 Pro", True)]


def test_a_stuck_tool_and_its_children_are_killed_at_the_timeout(bin_dir, tmp_path):
    pid_file = tmp_path / "child.pid"
    _tool(
        bin_dir, "nvidia-smi",
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
        """,
    )
    hw = detect_hardware(platform="linux", timeout=1.0)
    assert hw.gpus == ()
    assert hw.notes == ("nvidia-smi did not answer within 1s and was stopped",)
    child = int(pid_file.read_text())
    # The grandchild held the output pipe; it was killed with its parent's session, so nothing lingers.
    assert not _alive_after_a_while(child)


def _alive_after_a_while(pid: int) -> bool:
    """Poll (bounded) until the process is gone or a zombie; never an assertion on timing."""
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return False  # killed, waiting for a reaper
        except OSError:
            pass
        time.sleep(0.05)
    return True


def test_run_tool_reports_missing_and_failing(bin_dir):
    assert run_tool(("no-such-tool",), timeout=1) == (None, None)
    _tool(bin_dir, "failing", "import sys\nsys.stderr.write('boom\\n')\nsys.exit(3)\n")
    assert run_tool(("failing",), timeout=5) == (None, "failing exited with status 3: boom")


def test_jarvis_hardware_command_prints_json(bin_dir, capsys):
    import json

    _printing(bin_dir, "nvidia-smi", "nvidia_smi_a10g.csv")
    if sys.platform != "linux":
        pytest.skip("the command probes the real platform's tools")
    assert main(["hardware", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpus"] == [{"vendor": "nvidia", "name": "NVIDIA A10G", "memory_gb": 22.5, "count": 1, "unified": False}]
    assert doc["recommended_engine"] == "vllm"
    assert doc["cpu"]["threads"] >= 1


def test_jarvis_hardware_summary_names_each_gpu_with_its_memory(bin_dir, capsys):
    _printing(bin_dir, "nvidia-smi", "nvidia_smi_eight_h100.csv")
    _printing(bin_dir, "rocm-smi", "rocm_smi_rx7900xtx.json")
    if sys.platform != "linux":
        pytest.skip("the command probes the real platform's tools")
    assert main(["hardware"]) == 0
    lines = capsys.readouterr().out.splitlines()
    labels = [line[:13].strip() for line in lines]
    assert labels == ["platform", "cpu", "ram", "gpus", "", "", "recommended"]
    assert lines[1][13:].endswith(" threads") and lines[2][13:].endswith(" GB")
    assert [line[13:] for line in lines[3:6]] == [
        "8 x NVIDIA H100 80GB HBM3 (nvidia), 79.6 GB each",
        "Navi 31 [Radeon RX 7900 XT/7900 XTX] (amd), 24 GB",
        "660.8 GB of GPU memory in all",
    ]
    assert lines[6][13:].startswith("vllm: ")
