"""The lab's files: each student's runs under ``<root>/<student>/<run>/``, every snapshot one self-contained
``step-<N>.safetensors`` (the weights, with the model's description and tokenizer in its metadata: the single-file
checkpoint format, so :func:`llmviz.training.checkpoint.load_checkpoint` reads one back too).

Written atomically (a temporary file, then a rename: a reader sees the old file or the new one, never half), read
back with safetensors only (no pickle). Paths go through fsspec, so the root may be a local folder (the default:
``<runs folder>/lab``) or any filesystem fsspec speaks that every process of a hall can reach.

>>> import tempfile, torch
>>> storage = Storage(tempfile.mkdtemp())
>>> path, nbytes = storage.write_snapshot("s1", "r1", 5, {"w": torch.ones(2, 2)}, {"step": 5})
>>> state, meta = storage.read_snapshot(path)
>>> state["w"].tolist(), meta["step"], storage.usage("s1") == nbytes
([[1.0, 1.0], [1.0, 1.0]], 5, True)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import time

import fsspec
import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_bytes
from safetensors.torch import save as save_bytes

from llmviz.errors import CheckpointError

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_SNAPSHOT_BYTES = 8 * 2**30  # no snapshot file read back is bigger (a damaged or planted file is refused)


def safe_name(name: str) -> str:
    """``name`` if it can be one folder name (letters, digits, ``-``, ``_``), else ValueError: a student or run id
    never walks out of its folder.

    >>> safe_name("abc-1")
    'abc-1'
    >>> safe_name("../x")
    Traceback (most recent call last):
    ...
    ValueError: '../x' is not a safe folder name
    """
    if not _NAME.match(name):
        raise ValueError(f"{name!r} is not a safe folder name")
    return name


def content_hash(data: bytes) -> str:
    """The SHA-256 of ``data`` (uploads are kept once per content).

    >>> content_hash(b"")[:12]
    'e3b0c44298fc'
    """
    return hashlib.sha256(data).hexdigest()


class Storage:
    """A folder (or fsspec URL) of students' runs and uploads."""

    def __init__(self, root: str | os.PathLike):
        self.root = os.fspath(root)
        self.fs, self.base = fsspec.core.url_to_fs(self.root)

    def run_folder(self, student: str, run_id: str) -> str:
        return f"{self.base.rstrip('/')}/{safe_name(student)}/{safe_name(run_id)}"

    def write_atomic(self, path: str, data: bytes) -> None:
        """``data`` into ``path``, whole or not at all: a temporary file beside it, then a rename. On a local folder
        the file's bytes reach the disk before the rename (``fsync``) and the rename before this returns (the
        folder's ``fsync``), so a power cut leaves the old file or the new one, never an empty or torn one; the
        temporary file goes when writing fails. Elsewhere (an fsspec URL) the store's own move.

        >>> import tempfile
        >>> storage = Storage(tempfile.mkdtemp())
        >>> storage.write_atomic(f"{storage.base}/a/b.json", b"{}")
        >>> open(f"{storage.base}/a/b.json", "rb").read(), os.listdir(f"{storage.base}/a")
        (b'{}', ['b.json'])
        """
        folder = path.rsplit("/", 1)[0]
        self.fs.makedirs(folder, exist_ok=True)
        temporary = f"{folder}/.{secrets.token_hex(6)}.part"
        if "file" not in self.fs.protocol:
            with self.fs.open(temporary, "wb") as out:
                out.write(data)
            self.fs.mv(temporary, path)
            return
        try:
            with open(temporary, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    # ------------------------------------------------------------------ snapshots

    def write_snapshot(
        self, student: str, run_id: str, step: int, state: dict[str, torch.Tensor], meta: dict
    ) -> tuple[str, int]:
        """Write one snapshot; returns its path and size. Tied tensors are written once (safetensors refuses shared
        memory): a second name for the same tensor is kept in the metadata's ``tied`` map."""
        unique: dict[str, torch.Tensor] = {}
        tied: dict[str, str] = {}
        seen: dict[int, str] = {}
        for name, tensor in state.items():
            key = tensor.data_ptr() if tensor.numel() else id(tensor)
            if key in seen:
                tied[name] = seen[key]
                continue
            seen[key] = name
            unique[name] = tensor.detach().to("cpu").contiguous()
        data = save_bytes(unique, metadata={"llmviz": json.dumps({**meta, "step": step, "tied": tied})})
        path = f"{self.run_folder(student, run_id)}/step-{step:09d}.safetensors"
        self.write_atomic(path, data)
        return path, len(data)

    def read_snapshot(self, path: str) -> tuple[dict[str, torch.Tensor], dict]:
        """The weights and metadata of a snapshot file (safetensors only: never unpickled)."""
        return read_kept_file(self.fs, path)

    def read_run_record(self, student: str, run_id: str) -> dict:
        """A run folder's ``run.json`` as :func:`llmviz.lab.rebuild.write_run_file` wrote it (ValueError or OSError when
        it is missing or damaged)."""
        with self.fs.open(f"{self.run_folder(student, run_id)}/run.json", "rb") as source:
            found = json.loads(source.read())
        if not isinstance(found, dict):
            raise ValueError("run.json does not hold a run")
        return found

    # ------------------------------------------------------------------ resume states

    def write_resume(
        self, student: str, run_id: str, step: int, tensors: dict[str, torch.Tensor], scalars: dict
    ) -> tuple[str, int]:
        """Write a run's resume state at ``step`` (:meth:`llmviz.training.trainer.Trainer.training_state`: the
        optimizer's moments and the random streams as named tensors, the scalars as JSON in the file's metadata)
        beside the snapshot of that step: ``resume-<step>.safetensors``; returns its path and size."""
        unique = {name: tensor.detach().to("cpu").contiguous() for name, tensor in tensors.items()}
        data = save_bytes(unique, metadata={"llmviz": json.dumps({**scalars, "step": step})})
        path = f"{self.run_folder(student, run_id)}/resume-{step:09d}.safetensors"
        self.write_atomic(path, data)
        return path, len(data)

    def read_resume(self, path: str) -> tuple[dict[str, torch.Tensor], dict]:
        """A resume state's tensors and scalars (safetensors only: never unpickled)."""
        return read_kept_file(self.fs, path)

    def delete_file(self, path: str) -> None:
        try:
            self.fs.rm(path)
        except FileNotFoundError:
            pass

    def delete_run(self, student: str, run_id: str, tries: int = 5) -> None:
        """Delete the run's folder. A live run's keeper may write or thin a file in it meanwhile (a file gone, or a
        new one, under the delete's feet): it is tried again, ``tries`` times in all."""
        folder = self.run_folder(student, run_id)
        for left in range(tries - 1, -1, -1):
            try:
                if self.fs.exists(folder):
                    self.fs.rm(folder, recursive=True)
                return
            except OSError:  # FileNotFoundError (thinned meanwhile), or not empty (written meanwhile)
                if not left:
                    raise
                time.sleep(0.05)

    # ------------------------------------------------------------------ uploads

    def write_upload(self, student: str, data: bytes) -> tuple[str, str]:
        """Keep ``data`` once per content: returns ``(sha256, path)``."""
        digest = content_hash(data)
        path = f"{self.base.rstrip('/')}/{safe_name(student)}/uploads/{digest}"
        if not self.fs.exists(path):
            self.write_atomic(path, data)
        return digest, path

    def unwrite_upload(self, student: str, digest: str) -> None:
        """Remove an upload that a unit of work wrote and then rolled back, with the folders it made for it (the
        student's and their uploads' folder, when nothing else is in them)."""
        student_folder = f"{self.base.rstrip('/')}/{safe_name(student)}"
        self.delete_file(f"{student_folder}/uploads/{digest}")
        for folder in (f"{student_folder}/uploads", student_folder):
            with contextlib.suppress(OSError):
                if self.fs.exists(folder) and not self.fs.ls(folder):
                    self.fs.rmdir(folder)

    def read_upload(self, student: str, digest: str) -> bytes:
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValueError("not a content hash")
        with self.fs.open(f"{self.base.rstrip('/')}/{safe_name(student)}/uploads/{digest}", "rb") as source:
            return source.read()

    def usage(self, student: str) -> int:
        """Bytes under ``student``'s folder."""
        folder = f"{self.base.rstrip('/')}/{safe_name(student)}"
        if not self.fs.exists(folder):
            return 0
        return int(sum(info["size"] for info in self.fs.find(folder, detail=True).values()))


def file_words(path: str) -> str:
    """A kept file as a log line names it: its run and what it is, never the server's path (docs/classroom.md).

    >>> file_words("/srv/runs/lab/s-1f/ab12cd/step-000000020.safetensors")
    'run ab12cd: its snapshot at step 20'
    >>> file_words("s3://bucket/lab/s-1f/ab12cd/resume-000000040.safetensors")
    'run ab12cd: its resume state at step 40'
    >>> file_words("/srv/elsewhere/notes.bin")
    'a kept file'
    """
    parts = str(path).replace("\\", "/").rstrip("/").split("/")
    found = re.fullmatch(r"(step|resume)-(\d{1,12})\.safetensors", parts[-1])
    if found is None or len(parts) < 2:
        return "a kept file"
    kind = "snapshot" if found.group(1) == "step" else "resume state"
    return f"run {parts[-2]}: its {kind} at step {int(found.group(2))}"


def read_kept_file(fs, path: str) -> tuple[dict[str, torch.Tensor], dict]:
    """The tensors and the ``llmviz`` metadata of a file the lab wrote (a snapshot or a resume state) on the fsspec
    filesystem ``fs`` (None: the one ``path`` names): safetensors only, never unpickled, and no bigger than
    :data:`MAX_SNAPSHOT_BYTES`."""
    if fs is None:
        fs, path = fsspec.core.url_to_fs(path)
    try:
        if fs.size(path) > MAX_SNAPSHOT_BYTES:
            raise CheckpointError(f"{file_words(path)} is bigger than any file the lab writes")
        with fs.open(path, "rb") as source:
            data = source.read()
        state = load_bytes(data)
        header_length = int.from_bytes(data[:8], "little")
        header = json.loads(data[8 : 8 + header_length])
        meta = json.loads(header.get("__metadata__", {}).get("llmviz", "{}"))
    except CheckpointError:
        raise
    except OSError as error:  # its message names the path: the reason alone (a log line names no server path)
        raise CheckpointError(f"{file_words(path)} cannot be read: {error.strerror or type(error).__name__}") from None
    except (ValueError, SafetensorError) as error:
        raise CheckpointError(f"{file_words(path)} cannot be read: {error}") from None
    for name, original in dict(meta.get("tied", {})).items():
        if original in state:
            state[name] = state[original]
    return state, meta


def thinning_order(
    kept: list[tuple[str, int, int]], last_steps: dict[str, int], resumes: dict[str, int] | None = None
) -> list[tuple[str, int]]:
    """Which snapshots go first when a student is over their disk quota: ``kept`` is ``(run, step, bytes)`` with the
    oldest run first; the snapshots between a run's step 0 and its last step go first (oldest run first, earliest
    step first), then the oldest runs' step 0. A run's last step is never thinned: it is the run; nor the step
    whose resume state is kept (``resumes``: run → step), which resuming needs (the lab drops the resume state
    itself only after every snapshot it may drop: :meth:`llmviz.lab.service.Lab.thin`).

    >>> thinning_order([("a", 0, 1), ("a", 10, 1), ("a", 20, 1), ("a", 50, 1), ("b", 0, 1), ("b", 5, 1)],
    ...                {"a": 50, "b": 5}, {"a": 20})
    [('a', 10), ('a', 0), ('b', 0)]
    """
    resumes = resumes or {}
    kept_always = {(run, step) for run, step in last_steps.items()} | set(resumes.items())
    going = [(run, step) for run, step, _ in kept if (run, step) not in kept_always]
    return [item for item in going if item[1] != 0] + [item for item in going if item[1] == 0]
