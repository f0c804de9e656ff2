"""file_read and file_write: roots required, the resolved path checked before existence, the deny-list on
every component of the resolved path, confirmation for writes."""

from __future__ import annotations

import json
import os

import pytest

from jarvis_agents.tools.files import FileReadTool, FileWriteTool
from jarvis_agents.tools.paths import PathDenied
from jarvis_core.errors import ConfigError
from jarvis_core.tools import ToolExecutor
from jarvis_core.types import ToolCall


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    (r / "notes.txt").write_text("line 1\nline 2\nline 3\n", encoding="utf-8")
    return r


def test_roots_are_required():
    for cls in (FileReadTool, FileWriteTool):
        with pytest.raises(ConfigError, match=r"roots = \["):
            cls()


def test_a_denied_root_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="deny-list"):
        FileReadTool(roots=[tmp_path / ".ssh"])
    with pytest.raises(ConfigError, match="/proc"):
        FileReadTool(roots=["/proc"])


def test_reads_inside_the_root(root):
    tool = FileReadTool(roots=[root])
    assert tool.run(path="notes.txt") == "line 1\nline 2\nline 3\n"
    assert tool.run(path=str(root / "notes.txt"), max_lines=1).startswith("line 1\n[file_read: cut here")


def test_outside_the_root_is_refused_the_same_way_whether_or_not_it_exists(root, tmp_path):
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    tool = FileReadTool(roots=[root])
    messages = []
    for name in ("../secret.txt", "../does-not-exist.txt"):
        with pytest.raises(PathDenied) as info:
            tool.run(path=name)
        messages.append(str(info.value).replace(name, "X"))
    assert messages[0] == messages[1] and "outside" in messages[0]


@pytest.mark.parametrize("name", [".ssh/id_rsa", ".env", ".env.local", "server.pem", "tls.KEY", "id_ed25519",
                                  ".aws/credentials", "credentials.json", ".gnupg/pubring.kbx"])
def test_deny_list_inside_a_root(root, name):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("secret", encoding="utf-8")
    with pytest.raises(PathDenied, match="deny-list"):
        FileReadTool(roots=[root]).run(path=name)


def test_deny_list_applies_to_the_resolved_path_of_a_symlink(root):
    (root / ".env").write_text("API_KEY=x", encoding="utf-8")
    os.symlink(root / ".env", root / "harmless.txt")
    with pytest.raises(PathDenied, match=r"\.env"):
        FileReadTool(roots=[root]).run(path="harmless.txt")


def test_a_symlink_out_of_the_root_is_refused(root, tmp_path):
    (tmp_path / "outside.txt").write_text("x", encoding="utf-8")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    with pytest.raises(PathDenied, match="outside"):
        FileReadTool(roots=[root]).run(path="link.txt")


def test_proc_is_refused_even_with_root_slash():
    tool = FileReadTool(roots=["/"])
    for path in ("/proc/self/environ", "/sys/kernel/hostname", "/dev/zero"):
        with pytest.raises(PathDenied, match="never readable"):
            tool.run(path=path)


def test_missing_directory_fifo_and_binary(root):
    tool = FileReadTool(roots=[root])
    with pytest.raises(FileNotFoundError):
        tool.run(path="nope.txt")
    with pytest.raises(IsADirectoryError):
        tool.run(path=".")
    os.mkfifo(root / "pipe")
    with pytest.raises(PathDenied, match="not a regular file"):
        tool.run(path="pipe")  # opening it would block forever
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ValueError, match="binary"):
        tool.run(path="blob.bin")


def test_links_that_stay_inside_the_root_still_work(root):
    (root / "real").mkdir()
    (root / "real" / "a.txt").write_text("A", encoding="utf-8")
    os.symlink(root / "real", root / "alias")
    os.symlink(root / "real" / "a.txt", root / "a-link.txt")
    assert FileReadTool(roots=[root]).run(path="alias/a.txt") == "A"
    assert FileReadTool(roots=[root]).run(path="a-link.txt") == "A"
    FileWriteTool(roots=[root]).run(path="alias/new/b.txt", content="B")
    assert (root / "real" / "new" / "b.txt").read_text(encoding="utf-8") == "B"


def test_a_nul_anywhere_is_binary(root):
    (root / "late.bin").write_bytes(b"x" * 10_000 + b"\x00")
    with pytest.raises(ValueError, match="binary"):
        FileReadTool(roots=[root]).run(path="late.bin")


def test_read_is_capped(root):
    (root / "big.txt").write_text("x" * 5000, encoding="utf-8")
    text = FileReadTool(roots=[root], max_bytes=1000).run(path="big.txt")
    assert text.startswith("x" * 1000) and "cut here" in text and len(text) < 1100


def test_write_creates_replaces_and_appends(root):
    tool = FileWriteTool(roots=[root])
    assert "wrote 5 bytes" in tool.run(path="sub/out.txt", content="hello")
    os.chmod(root / "sub/out.txt", 0o640)
    tool.run(path="sub/out.txt", content="bye")
    tool.run(path="sub/out.txt", content="!", append=True)
    assert (root / "sub/out.txt").read_text(encoding="utf-8") == "bye!"
    assert (root / "sub/out.txt").stat().st_mode & 0o777 == 0o640
    assert [p.name for p in (root / "sub").iterdir()] == ["out.txt"]  # no temporary file left behind
    with pytest.raises(PathDenied):
        tool.run(path="../escape.txt", content="x")
    with pytest.raises(PathDenied):
        tool.run(path=".env", content="x")
    with pytest.raises(ValueError, match="at most"):
        FileWriteTool(roots=[root], max_bytes=3).run(path="a.txt", content="four")


def test_write_needs_confirmation_through_the_executor(root):
    call = ToolCall("w1", "file_write", json.dumps({"path": "a.txt", "content": "hi"}))
    denied = ToolExecutor([FileWriteTool(roots=[root])]).execute(call)
    assert not denied.ok and "denied" in denied.content and not (root / "a.txt").exists()
    seen = []
    approved = ToolExecutor([FileWriteTool(roots=[root])],
                            approver=lambda c, tool: seen.append(c.name) or True).execute(call)
    assert approved.ok and (root / "a.txt").read_text(encoding="utf-8") == "hi" and seen == ["file_write"]


# -- races: a component swapped for a symlink to outside between the check and the open --------------------
SWAPPER = r"""
import os, sys
root, outside, mode = sys.argv[1], sys.argv[2], sys.argv[3]
os.chdir(root)
if mode == "file":  # race.txt: a plain file, then a symlink to the outside file, atomically, over and over
    while True:
        os.symlink(os.path.join(outside, "secret.txt"), "link.tmp")
        os.replace("link.tmp", "race.txt")
        with open("file.tmp", "w") as f:
            f.write("inside\n")
        os.replace("file.tmp", "race.txt")
else:  # sub: a directory, then a symlink to the outside directory
    import shutil

    def step():
        if not os.path.isdir("parked"):
            os.rename("sub", "parked")
            os.symlink(outside, "sub")
        elif os.path.islink("sub") or not os.path.lexists("sub"):
            if os.path.lexists("sub"):
                os.unlink("sub")
            os.rename("parked", "sub")
        else:  # a write made a new sub meanwhile (the tool creates missing directories)
            shutil.rmtree("sub", ignore_errors=True)

    while True:
        try:
            step()
        except OSError:
            pass
"""


@pytest.fixture
def race(root, tmp_path):
    """``race(mode)`` starts a process swapping a path component inside ``root`` between a real entry and a
    symlink to ``outside`` (holding ``secret.txt``); returns the outside directory."""
    import subprocess
    import sys

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n", encoding="utf-8")
    (root / "race.txt").write_text("inside\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "secret.txt").write_text("inside\n", encoding="utf-8")
    procs = []

    def start(mode):
        procs.append(subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside), mode]))
        return outside

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _untouched(outside):
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "OUTSIDE-SECRET\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def _attempts(fn, n=3000):
    """Run ``fn`` ``n`` times; the counts of what it returned and of the refusals."""
    done, refused = [], 0
    for _ in range(n):
        try:
            done.append(fn())
        except (PathDenied, FileNotFoundError, NotADirectoryError):
            refused += 1
    return done, refused


@pytest.mark.parametrize("mode", ["file", "dir"])
def test_reads_never_follow_a_swapped_symlink_out_of_the_root(root, race, mode):
    outside = race(mode)
    tool = FileReadTool(roots=[root])
    path = "race.txt" if mode == "file" else "sub/secret.txt"
    texts, refused = _attempts(lambda: tool.run(path=path), 3000 if mode == "file" else 1000)
    assert not [t for t in texts if "OUTSIDE" in t]  # 12 of 3,000 before the reads walked from the root
    assert texts and refused  # both sides of the race were seen
    _untouched(outside)


@pytest.mark.parametrize("mode", ["file", "dir"])
@pytest.mark.parametrize("append", [True, False])
def test_writes_never_follow_a_swapped_symlink_out_of_the_root(root, race, mode, append):
    outside = race(mode)
    tool = FileWriteTool(roots=[root])
    path = "race.txt" if mode == "file" else "sub/secret.txt"
    done, refused = _attempts(lambda: tool.run(path=path, content="x", append=append), 3000 if mode == "file" else 1000)
    assert done and refused
    _untouched(outside)  # 34 of 3,000 appends landed outside before
