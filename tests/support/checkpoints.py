"""Crafted checkpoints: a good one copied with its checkpoint.json edited (tests of what a damaged description does)."""

import json


def crafted(good, folder, change):
    """A copy of the good checkpoint (weights, trainer state) whose checkpoint.json was edited by ``change``."""
    folder.mkdir()
    for name in ("model.safetensors", "trainer.safetensors"):
        (folder / name).write_bytes((good / name).read_bytes())
    meta = json.loads((good / "checkpoint.json").read_text())
    change(meta)
    (folder / "checkpoint.json").write_text(json.dumps(meta))
    return folder


def setting(*path_and_value):
    """A change that sets the field at ``path`` (keys, then the value) of a checkpoint.json."""
    *path, value = path_and_value

    def change(meta):
        target = meta
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change
