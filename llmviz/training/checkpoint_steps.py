"""A checkpoint's earlier steps: copies of its weights at some of the snapshot steps (0, 1, 2, 5, 10, 20, 50, …), in
``steps/`` beside its ``model.safetensors``, so that a model shipped without its training run can still be replayed
across training (the shipped character-level transformer carries them: the Model page's flow redraws a sentence at
each step at once). Written by ``python -m llmviz train --keep-steps 0,10,50 …``; kept in float16 (half the bytes;
the model runs in float32 once loaded).

>>> import tempfile
>>> from llmviz.models.charlevel import build_char_model
>>> folder = Path(tempfile.mkdtemp())
>>> model = build_char_model("bigram-neural", vocab_size=27)
>>> [p.name for p in save_steps(folder, {0: model_state_copy(model), 50: model_state_copy(model)})]
['step-000000.safetensors', 'step-000050.safetensors']
>>> step_file(folder, 50).name, saved_steps(folder)
('step-000050.safetensors', [0, 50])
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import torch
import torch.nn as nn

from llmviz.errors import CheckpointError
from llmviz.training.safetensors_file import header_shapes, read_safetensors

STEPS_DIR = "steps"
STEP_DTYPE = torch.float16  #: the kept steps' weights: half of float32's bytes, plenty to draw a picture from
MAX_KEPT_STEPS = 64  #: steps/ files read at most (the snapshot series of a billion steps is 30 long)
_NAME = re.compile(r"^step-(\d{6,12})\.safetensors$")


def step_file(directory: str | Path, step: int) -> Path:
    """The file of ``step``'s weights in checkpoint ``directory``.

    >>> step_file("data/names-transformer", 200).as_posix()
    'data/names-transformer/steps/step-000200.safetensors'
    """
    return Path(directory) / STEPS_DIR / f"step-{step:06d}.safetensors"


def model_state_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    """``model``'s weights as kept for a step: detached copies on the CPU in :data:`STEP_DTYPE` (floating tensors
    only are cast)."""
    return {
        name: (t.detach().to("cpu", STEP_DTYPE) if t.is_floating_point() else t.detach().to("cpu")).clone()
        for name, t in model.state_dict().items()
    }


def save_steps(directory: str | Path, states: dict[int, dict[str, torch.Tensor]]) -> list[Path]:
    """Write each step's weights (``{step: state}``) into ``directory/steps/``; returns the files written."""
    from safetensors.torch import save_file

    written = []
    for step, state in sorted(states.items()):
        path = step_file(directory, step)
        path.parent.mkdir(parents=True, exist_ok=True)
        tensors = {name: t.to(STEP_DTYPE) if t.is_floating_point() else t for name, t in state.items()}
        # tied weights share storage: safetensors keeps each tensor once, so each gets its own copy
        save_file({name: t.contiguous().clone() for name, t in tensors.items()}, str(path))
        written.append(path)
    return written


def drop_steps(directory: str | Path) -> int:
    """Remove the step files in ``directory/steps/`` (those of a run saved there before: a new run saved in the folder
    must not show them as its own steps); returns how many were removed. Other files stay.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = save_steps(folder, {0: {"w": torch.zeros(2)}, 10: {"w": torch.ones(2)}})
    >>> drop_steps(folder), saved_steps(folder), (folder / STEPS_DIR).exists()
    (2, [], False)
    """
    folder = Path(directory) / STEPS_DIR
    if not folder.is_dir():
        return 0
    names = [entry.name for entry in os.scandir(folder) if _NAME.match(entry.name)]
    for name in names:
        (folder / name).unlink(missing_ok=True)
    if not any(folder.iterdir()):
        folder.rmdir()
    return len(names)


def saved_steps(directory: str | Path) -> list[int]:
    """The steps whose weights ``directory/steps/`` holds, in order (none: ``[]``); at most :data:`MAX_KEPT_STEPS`
    (of the folder's first 256 names: a folder of a million files is not listed whole)."""
    folder = Path(directory) / STEPS_DIR
    if not folder.is_dir():
        return []
    names = sorted(itertools.islice((entry.name for entry in os.scandir(folder)), 4 * MAX_KEPT_STEPS))
    steps = [int(match.group(1)) for name in names if (match := _NAME.match(name)) and (folder / name).is_file()]
    return sorted(steps)[:MAX_KEPT_STEPS]


def checkpoint_steps(directory: str | Path, final: int | None) -> list[int]:
    """Every step a checkpoint can be shown at: its kept steps and its own (``final``, the step it was saved at);
    ``[]`` for a checkpoint with no kept steps (it is shown at its one step, no slider).

    >>> checkpoint_steps("no/such/folder", 2000)
    []
    """
    kept = [step for step in saved_steps(directory) if final is None or step < final]
    if not kept:
        return []
    return kept + ([final] if final is not None else [])


def load_step_into(model: nn.Module, directory: str | Path, step: int) -> nn.Module:
    """``model`` (built from the checkpoint's description) with ``step``'s kept weights, in float32 and eval mode.
    :class:`CheckpointError` (one sentence) for a step that is not kept or a file that does not fit the model."""
    path = step_file(directory, step)
    if not path.is_file():
        raise CheckpointError(f"{Path(directory).name} keeps no weights of step {step:,}.")
    damaged = CheckpointError(
        f"The weights of step {step:,} in {Path(directory).name} cannot be read: the file is damaged."
    )
    expected = model.state_dict()
    shapes = header_shapes(path)  # names and shapes from the header, before any tensor is read
    if shapes is None:
        raise damaged
    if shapes != {name: tuple(t.shape) for name, t in expected.items()}:
        raise CheckpointError(f"The weights of step {step:,} in {Path(directory).name} do not fit its model.")
    try:
        state = read_safetensors(path)
    except CheckpointError:  # its own words name the file's header: the student reads which step, and why
        raise damaged from None
    try:
        model.load_state_dict(
            {name: t.to(expected[name].dtype) if name in expected else t for name, t in state.items()}, strict=True
        )
    except RuntimeError as error:
        raise CheckpointError(
            f"The weights of step {step:,} in {Path(directory).name} do not fit its model: {str(error).splitlines()[0]}"
        ) from None
    return model.eval()
