"""Reading a safetensors file safely: only a regular file is opened (never a device or a pipe), and a pickle
(torch.save) file is refused before anything parses it; messages name the file, never the server's folders.

Shared by the trainer's checkpoints (:mod:`llmviz.training.trainer`) and Hugging Face GPT-2 folders
(:mod:`llmviz.hub.gpt2`),
so that neither has to import the other.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import torch

from llmviz.errors import CheckpointError

# the first bytes of a zip (torch.save's format since 1.6) and of pickle protocols 2 to 5
PICKLE_OR_ZIP = (b"PK\x03\x04", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


def regular_file(path: Path) -> os.stat_result:
    """``path``'s status when it is a regular file (following links), else a :class:`CheckpointError`.

    A device (``/dev/zero``), a pipe or a socket would never finish reading, or block for ever.
    Messages name the file, never the server's folders.
    """
    try:
        status = path.stat()
    except FileNotFoundError:
        raise CheckpointError(
            f"No file {path.name}" + (" (a link to nothing)." if path.is_symlink() else ".")
        ) from None
    except OSError as error:
        raise CheckpointError(f"{path.name} cannot be read ({error.strerror or type(error).__name__}).") from None
    if stat.S_ISDIR(status.st_mode):
        raise CheckpointError(f"{path.name} is a folder, not a file.")
    if not stat.S_ISREG(status.st_mode):
        raise CheckpointError(
            f"{path.name} is not a regular file (a device, a pipe or a socket): it cannot hold a checkpoint."
        )
    return status


def refuse_pickle(path: Path) -> None:
    with path.open("rb") as handle:
        head = handle.read(9)
    # a safetensors file is an 8-byte header length followed by a JSON header: byte 8 is "{"
    looks_like_safetensors = len(head) == 9 and head[8:9] == b"{"
    if not looks_like_safetensors and head.startswith(PICKLE_OR_ZIP):
        raise CheckpointError(
            f"{path.name} is a pickle (torch.save) file. llmviz loads only safetensors, because unpickling a "
            "file can run any code it contains. Convert it with safetensors where you trust it."
        )


def read_safetensors(path: str | Path) -> dict[str, torch.Tensor]:
    """Load a safetensors file; anything else (a pickle, a zip from torch.save, a device) is refused."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    regular_file(path)
    refuse_pickle(path)
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        detail = "" if "/" in str(error) or os.sep in str(error) else f": {error}"  # a detail naming a path is left out
        raise CheckpointError(
            f"{path.name} is not a valid safetensors file (truncated or corrupted?){detail}"
        ) from None


def header_shapes(path: str | Path) -> dict[str, tuple[int, ...]] | None:
    """The tensors' names and shapes in a safetensors file's header, no tensor data read; None: no such header (a
    damaged, truncated or foreign file).

    >>> import tempfile
    >>> from safetensors.torch import save_file
    >>> file = Path(tempfile.mkdtemp()) / "w.safetensors"
    >>> save_file({"w": torch.zeros(2, 3)}, str(file))
    >>> header_shapes(file), header_shapes(Path(tempfile.mkdtemp()) / "none.safetensors")
    ({'w': (2, 3)}, None)
    """
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), "pt") as handle:
            return {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}
    except (SafetensorError, OSError, ValueError):
        return None
