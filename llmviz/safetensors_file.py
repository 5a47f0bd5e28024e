"""Reading a safetensors file safely: a pickle (torch.save) file is refused before anything parses it.

Shared by the trainer's checkpoints (:mod:`llmviz.train`) and Hugging Face GPT-2 folders (:mod:`llmviz.gpt2`),
so that neither has to import the other.
"""

from __future__ import annotations

from pathlib import Path

import torch

from llmviz.errors import CheckpointError

# the first bytes of a zip (torch.save's format since 1.6) and of pickle protocols 2 to 5
PICKLE_OR_ZIP = (b"PK\x03\x04", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


def read_safetensors(path: str | Path) -> dict[str, torch.Tensor]:
    """Load a safetensors file; anything else (a pickle, a zip from torch.save) is refused."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"No checkpoint file at {path}.")
    with path.open("rb") as handle:
        head = handle.read(9)
    # a safetensors file is an 8-byte header length followed by a JSON header: byte 8 is "{"
    looks_like_safetensors = len(head) == 9 and head[8:9] == b"{"
    if not looks_like_safetensors and head.startswith(PICKLE_OR_ZIP):
        raise CheckpointError(
            f"{path.name} is a pickle (torch.save) file. llmviz loads only safetensors, because unpickling a "
            "file can run any code it contains. Convert it with safetensors where you trust it."
        )
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path.name} is not a valid safetensors file (truncated or corrupted?): {error}") from None
