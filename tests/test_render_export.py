"""vizhooks.render.export.write_atomic, through which every command's files are written: whole or not at all,
a refusal said of the path asked for, and the permissions the umask gives a new file (QA 2026-12-06: every
file came out owner-only, 0600, whatever the umask, so a teacher's atlas in a shared folder was unreadable)."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from vizhooks.render.export import write_atomic


@pytest.fixture
def umask():
    """``os.umask`` for the test, the process's own put back after it (this test writes and reads its own
    folder only)."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_a_new_file_has_the_permissions_open_gives_it(tmp_path, umask, mask):
    umask(mask)
    written = write_atomic(tmp_path / "atlas" / "manifest.json", b"{}")
    with open(tmp_path / "by_open.json", "w") as f:  # the answer: what Python's own open makes here
        f.write("{}")
    assert stat.S_IMODE(written.stat().st_mode) == stat.S_IMODE((tmp_path / "by_open.json").stat().st_mode)
    assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~mask


def test_a_file_written_again_keeps_its_permissions(tmp_path, umask):
    umask(0o022)
    target = write_atomic(tmp_path / "my_model.pth", b"first")
    target.chmod(0o600)  # the owner made it private
    write_atomic(target, b"second")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_bytes() == b"second"


def test_the_file_is_replaced_whole_and_no_part_file_is_left(tmp_path):
    target = tmp_path / "grid.png"
    target.write_bytes(b"old")
    assert write_atomic(target, b"new picture") == target
    assert target.read_bytes() == b"new picture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.png"]


def test_a_refusal_names_the_path_asked_for_and_leaves_nothing(tmp_path):
    (tmp_path / "grid.png").mkdir()  # a folder where the file should be
    with pytest.raises(OSError) as refused:
        write_atomic(tmp_path / "grid.png", b"x")
    assert refused.value.filename == str(tmp_path / "grid.png") and refused.value.errno == errno.EISDIR
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.png"]
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OSError) as refused:
        write_atomic(tmp_path / "file" / "grid.png", b"x")  # under a file: no folder can be made there
    assert refused.value.filename in (str(tmp_path / "file" / "grid.png"), str(tmp_path / "file"))
