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


def good_checkpoint(folder):
    """A small, valid checkpoint folder (a 1-step GPT nano, no trainer state) under ``folder``."""
    from llmviz.training.checkpoint import save_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    config = TrainConfig(model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=1)
    trainer = Trainer.from_text("hello world, hello attention\n" * 40, config)
    return save_checkpoint(folder / "run", trainer, trainer_state=False)


def craft(good, folder, name, change):
    """A copy of the good checkpoint's weights under ``folder/name``, its checkpoint.json edited by ``change``."""
    target = folder / name
    target.mkdir()
    (target / "model.safetensors").write_bytes((good / "model.safetensors").read_bytes())
    meta = json.loads((good / "checkpoint.json").read_text())
    change(meta)
    (target / "checkpoint.json").write_text(json.dumps(meta))
    return target


def bounded(call, seconds=10):
    """``call()``'s exception (or None), failing the test if it does not return within ``seconds`` (a FIFO or
    /dev/zero would block or fill memory for ever on the old code: the thread is a daemon, so it dies with pytest)."""
    import threading

    outcome = {}

    def target():
        try:
            call()
        except BaseException as error:  # noqa: BLE001 - the test looks at what it was
            outcome["error"] = error
        outcome["done"] = True

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome.get("done"), f"still reading after {seconds} s"
    return outcome.get("error")


def hostile_runs_folder(good, tmp_path):
    """A runs folder with one good checkpoint and every hostile entry a student could leave there: JSON nested
    200,000 deep, /dev/zero and FIFOs in place of files, /dev/null as a checkpoint file."""
    import os

    runs = tmp_path / "runs"
    runs.mkdir()
    craft(good, runs, "fine", lambda meta: None)
    deep = craft(good, runs, "deep", lambda meta: None)
    (deep / "checkpoint.json").write_text("[" * 200_000 + "]" * 200_000)
    zero = craft(good, runs, "zero-meta", lambda meta: None)
    (zero / "checkpoint.json").unlink()
    (zero / "checkpoint.json").symlink_to("/dev/zero")
    pipe = craft(good, runs, "pipe-meta", lambda meta: None)
    (pipe / "checkpoint.json").unlink()
    os.mkfifo(pipe / "checkpoint.json")
    weights = craft(good, runs, "zero-weights", lambda meta: None)
    (weights / "model.safetensors").unlink()
    (weights / "model.safetensors").symlink_to("/dev/zero")
    (runs / "null.safetensors").symlink_to("/dev/null")
    os.mkfifo(runs / "fifo")
    (runs / "notes.txt").write_text("not a checkpoint")  # other files are not listed
    return runs
