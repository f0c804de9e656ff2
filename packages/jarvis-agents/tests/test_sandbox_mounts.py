"""Mount checks: allow-listed roots only, blocked patterns on the path and inside directories, symlinks resolved."""

from __future__ import annotations

import pytest

from jarvis_agents.sandbox import Mount, MountPolicy, MountRefusedError


@pytest.fixture
def root(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "main.py").write_text("print(1)")
    return tmp_path


def test_a_path_under_an_allowed_root_is_resolved(root):
    policy = MountPolicy(allowed_roots=(str(root),))
    checked = policy.check(Mount(str(root / "project" / ".." / "project"), "/work"))
    assert checked.source == str((root / "project").resolve())
    assert checked.volume_arg() == f"{checked.source}:/work:ro"
    assert policy.check(Mount(str(root / "project"), "/work", read_only=False)).volume_arg().endswith(":/work")


def test_no_roots_means_no_mounts(root):
    with pytest.raises(MountRefusedError, match="no mount roots"):
        MountPolicy().check(Mount(str(root / "project"), "/work"))


def test_outside_the_allow_list_is_refused(root, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    with pytest.raises(MountRefusedError, match="not under an allowed root"):
        MountPolicy(allowed_roots=(str(root),)).check(Mount(str(other), "/work"))


def test_a_symlink_out_of_the_root_is_refused(root, tmp_path_factory):
    other = tmp_path_factory.mktemp("outside")
    (root / "link").symlink_to(other)
    with pytest.raises(MountRefusedError, match="not under an allowed root"):
        MountPolicy(allowed_roots=(str(root),)).check(Mount(str(root / "link"), "/work"))


@pytest.mark.parametrize(
    "name", [".ssh", ".aws", ".env", ".env.local", "id_rsa", "id_ed25519.pub", "server.pem", "my_secret.txt",
             "aws_credentials", ".hf_token", "token", "github-token", "docker.sock", "DB_PASSWORD"]
)
def test_blocked_names_in_the_path_are_refused(root, name):
    target = root / "project" / name
    target.mkdir()
    with pytest.raises(MountRefusedError, match="blocked pattern"):
        MountPolicy(allowed_roots=(str(root),)).check(Mount(str(target), "/x"))


def test_a_directory_holding_a_blocked_file_deep_down_is_refused(root):
    deep = root / "project" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "credentials.json").write_text("{}")
    with pytest.raises(MountRefusedError, match=r"credentials\.json"):
        MountPolicy(allowed_roots=(str(root),)).check(Mount(str(root / "project"), "/x"))


def test_model_files_are_not_mistaken_for_tokens(root):
    (root / "project" / "tokenizer.json").write_text("{}")
    (root / "project" / "tokenizer_config.json").write_text("{}")
    MountPolicy(allowed_roots=(str(root),)).check(Mount(str(root / "project"), "/model"))


def test_missing_and_system_paths_are_refused(root):
    policy = MountPolicy(allowed_roots=("/",))
    with pytest.raises(MountRefusedError, match="does not exist"):
        policy.check(Mount(str(root / "nope"), "/x"))
    for path in ("/", "/etc", "/proc/self", "/root"):
        with pytest.raises(MountRefusedError, match="system path"):
            policy.check(Mount(path, "/x"))


@pytest.mark.parametrize("target", ["relative", "/", "/a/../b", "/a:b", "/a,b", "/a/"])
def test_bad_targets_are_refused(root, target):
    with pytest.raises(MountRefusedError, match="target"):
        MountPolicy(allowed_roots=(str(root),)).check(Mount(str(root / "project"), target))


def test_separator_characters_in_the_source_are_refused(root):
    odd = root / "a:b"
    odd.mkdir()
    with pytest.raises(MountRefusedError, match="':' and ','"):
        MountPolicy(allowed_roots=(str(root),)).check(Mount(str(odd), "/x"))
