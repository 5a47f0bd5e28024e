"""The lab's run files are written whole or not at all (``Storage.write_atomic``, which ``llmviz.lab.rebuild``'s
run.json and student files use too)."""

from __future__ import annotations

import os

import pytest

from llmviz.lab import rebuild
from llmviz.lab.storage import Storage


def test_a_write_replaces_the_file_whole_and_leaves_nothing_beside_it(tmp_path):
    storage = Storage(tmp_path)
    path = f"{storage.base}/kim/run-1/run.json"
    storage.write_atomic(path, b"old")
    storage.write_atomic(path, b"new" * 1000)
    assert open(path, "rb").read() == b"new" * 1000
    assert os.listdir(os.path.dirname(path)) == ["run.json"]


def test_a_write_that_fails_leaves_the_old_state_and_no_temporary_file(tmp_path):
    storage = Storage(tmp_path)
    folder = tmp_path / "kim"
    (folder / "run.json").mkdir(parents=True)  # a folder where the file goes: the rename fails
    with pytest.raises(OSError):
        storage.write_atomic(f"{storage.base}/kim/run.json", b"{}")
    assert os.listdir(folder) == ["run.json"] and (folder / "run.json").is_dir()


def test_rebuild_writes_through_the_one_atomic_write():
    assert not hasattr(rebuild, "_write_atomic") and not hasattr(Storage, "_write_atomic")
