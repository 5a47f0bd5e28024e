"""Checkpoints: what a model is (its description), and its files on disk.

A checkpoint is a folder with ``checkpoint.json`` (the model's description, its tokenizer, the training config and
metrics), ``model.safetensors`` (the weights) and, for resuming, ``trainer.safetensors`` (optimizer and random
states). Reading one never unpickles anything: the description is plain JSON, checked (size, nesting, the shapes it
implies) before any tensor is allocated, and the weights are read as safetensors only.

Writing a run's checkpoint and putting a resumed run back (:func:`save_checkpoint`, :func:`restore_training_state`)
live here too. Split out of :mod:`llmviz.training.trainer`, which imports it.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.nn as nn

from llmviz.errors import CheckpointError, ConfigError
from llmviz.models.charlevel import CHAR_MODELS, build_char_model
from llmviz.models.gpt import GPT, MAX_EXPERTS, SIZE_LIMITS, GPTConfig, size_problem
from llmviz.tokenizers.base import Tokenizer, TokenizerError
from llmviz.tokenizers.saved import tokenizer_from_dict
from llmviz.training.safetensors_file import header_shapes, read_safetensors, refuse_pickle, regular_file


def model_class(model: nn.Module) -> type:
    """The model's own class, also once FSDP has sharded it (``fully_shard`` swaps the class of the module
    it shards for a subclass of ``FSDPModule`` and of that class, named ``FSDP<name>``)."""
    kind: type = type(model)
    if "torch.distributed.fsdp" not in sys.modules:  # nothing was sharded (and the import takes a second)
        return kind
    from torch.distributed.fsdp import FSDPModule

    if isinstance(model, FSDPModule):
        kind = next(base for base in kind.__bases__ if not issubclass(base, FSDPModule))
    return kind


def model_description(model: nn.Module) -> dict:
    if isinstance(model, GPT) and model_class(model) is GPT:
        return {"kind": "gpt", "config": model.config.to_dict()}
    name = next(n for n, cls in CHAR_MODELS.items() if model_class(model) is cls)
    char_model: Any = model  # one of CHAR_MODELS: each has its vocab_size (and the transformer its config)
    kwargs = {"context_length": char_model.config.context_length} if name == "transformer" else {}
    return {"kind": "char", "name": name, "vocab_size": char_model.vocab_size, "kwargs": kwargs}


def run_facts(model: nn.Module, config: Any, tokenizer: Any, tokens: tuple[int, int], **more: Any) -> dict:
    """What a runner's ``describe()`` says of a run whose examples are not a :class:`~llmviz.training.dataset.Dataset`
    (the names classifier, SFT, DPO): its model's description, its settings, its tokenizer and vocabulary, and the
    tokens it trains on and is measured on (``tokens``: train, held out), plus ``more``."""
    return {
        "description": model_description(model),
        "config": config,
        "tokenizer": tokenizer,
        "vocab_size": tokenizer.vocab_size,
        "train_tokens": tokens[0],
        "val_tokens": tokens[1],
        **more,
    }


def model_from_description(description: dict) -> nn.Module:
    if description["kind"] == "gpt":
        return GPT(GPTConfig(**description["config"]))
    return build_char_model(description["name"], description["vocab_size"], **description.get("kwargs", {}))


MODEL_FILE = "model.safetensors"
STATE_FILE = "trainer.safetensors"
META_FILE = "checkpoint.json"


def is_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` names an llmviz checkpoint (a folder with :data:`META_FILE`, or a ``.safetensors`` file)
    rather than a Hugging Face model.

    >>> is_checkpoint("gpt2"), is_checkpoint("run/model.safetensors")
    (False, True)
    """
    return os.path.lexists(Path(path) / META_FILE) or Path(path).suffix == ".safetensors"


def model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if isinstance(model, GPT) and model.config.tie_weights:
        state.pop("lm_head.weight", None)  # the same matrix as tok_emb.weight
    return state


MAX_META_BYTES = 64 * 2**20  # a checkpoint.json (configs, tokenizer, metrics) is far smaller
MAX_JSON_DEPTH = 64  # a checkpoint's description nests a few levels; 200,000 levels is an attack


def _read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (never blocks on a pipe swapped in meanwhile)."""
    if regular_file(path).st_size > limit:
        raise CheckpointError(f"{path.name} is larger than {limit // 2**20} MB: not a checkpoint description.")
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise CheckpointError(f"{path.name} cannot be read ({error.strerror or type(error).__name__}).") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise CheckpointError(f"{path.name} is not a regular file: it cannot hold a checkpoint.")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise CheckpointError(f"{path.name} is larger than {limit // 2**20} MB: not a checkpoint description.")
    return data


def _json_depth(value) -> int:
    """How deeply lists and dicts nest in a parsed JSON value, counted without recursion.

    >>> _json_depth({"a": [1, {"b": []}]}), _json_depth(3)
    (4, 0)
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_description(text: str | bytes, name: str = META_FILE) -> dict:
    """A checkpoint's JSON description as a dict; anything else is a :class:`CheckpointError` that says why.

    >>> parse_description("[" * 100_000 + "]" * 100_000)
    Traceback (most recent call last):
    ...
    llmviz.errors.CheckpointError: checkpoint.json is nested too deeply (more than 64 levels) to be a checkpoint
    description.
    """
    too_deep = f"{name} is nested too deeply (more than {MAX_JSON_DEPTH} levels) to be a checkpoint description."
    try:
        data = json.loads(text)
    except RecursionError:
        raise CheckpointError(too_deep) from None
    except (UnicodeDecodeError, ValueError) as error:
        raise CheckpointError(f"{name} is not valid JSON ({error}).") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{name} does not describe a checkpoint (it is not a JSON object).")
    if _json_depth(data) > MAX_JSON_DEPTH:
        raise CheckpointError(too_deep)
    return data


MAX_STEP = 10**12  #: a step count no run reaches (a billion steps a day for 2,700 years)
MAX_METRICS = 1_000_000  #: metrics rows a description may hold (one per step at most; the file is under 64 MB)
_NUMBER = (int, float)
#: the optional dict-valued parts a checkpoint may carry: its training config, what was adapted, its task
_DICT_FIELDS = ("train_config", "final", "lora", "task", "quantization")
_TEXT_FIELDS = ("corpus", "corpus_sha256", "command")


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number_or_none(value) -> bool:
    return value is None or (isinstance(value, _NUMBER) and not isinstance(value, bool))


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:40] + "…"


def description_problem(meta: dict) -> str | None:
    """What is wrong with a checkpoint description's fields (None: nothing), checked before any is used: a page
    formats ``final.val_loss`` as a number, the picker reads ``step``, a resumed run reads ``metrics`` and
    ``optimizer_param_groups``. Unknown extra fields are allowed (nothing reads them).

    >>> description_problem({"model": {"kind": "gpt"}, "tokenizer": {}, "step": 10, "final": {"val_loss": 1.5}})
    >>> description_problem({"model": {"kind": "gpt"}, "tokenizer": {}, "final": {"val_loss": "low"}})
    'final.val_loss is "low", not a number'
    >>> description_problem({"model": {"kind": "gpt"}, "tokenizer": {}, "final": "done"})
    'final is "done", not a JSON object'
    >>> description_problem({"model": {"kind": "gpt"}, "tokenizer": {}, "step": -1})
    'step is -1, not a whole number from 0 to 1,000,000,000,000'
    """
    if not isinstance(meta.get("model"), dict) or meta["model"].get("kind") not in ("gpt", "char"):
        return f"model is {_shown(meta.get('model'))}, not the description of a GPT or a char-level model"
    if not isinstance(meta.get("tokenizer"), dict):
        return "the tokenizer is not described"
    if meta.get("format", "llmviz-checkpoint") != "llmviz-checkpoint" or meta.get("version", 1) != 1:
        return f"it is in format {_shown(meta.get('format'))} version {_shown(meta.get('version'))}, not llmviz's 1"
    step = meta.get("step", 0)
    if not _whole(step) or not 0 <= step <= MAX_STEP:
        return f"step is {_shown(step)}, not a whole number from 0 to {MAX_STEP:,}"
    return _fields_problem(meta) or _metrics_problem(meta.get("metrics", []))


def _fields_problem(meta: dict) -> str | None:
    """What is wrong with a description's objects, texts, final losses and optimizer groups (None: nothing).

    >>> _fields_problem({"final": {"val_loss": 1.5}, "optimizer_param_groups": [{}]})
    >>> _fields_problem({"optimizer_param_groups": [1]})
    'optimizer_param_groups is not a list of JSON objects'
    """
    for name in _DICT_FIELDS:
        if name in meta and not isinstance(meta[name], dict):
            return f"{name} is {_shown(meta[name])}, not a JSON object"
    for name in _TEXT_FIELDS:
        if name in meta and not isinstance(meta[name], str):
            return f"{name} is {_shown(meta[name])}, not text"
    for name in ("train_loss", "val_loss"):
        value = meta.get("final", {}).get(name)
        if not _number_or_none(value):
            return f"final.{name} is {_shown(value)}, not a number"
    groups = meta.get("optimizer_param_groups", [])
    if not isinstance(groups, list) or not all(isinstance(group, dict) for group in groups):
        return "optimizer_param_groups is not a list of JSON objects"
    return None


def _metrics_problem(metrics) -> str | None:
    """What is wrong with a description's ``metrics`` (a list of rows of numbers, each with its step)."""
    if not isinstance(metrics, list) or len(metrics) > MAX_METRICS:
        return f"metrics is not a list of at most {MAX_METRICS:,} rows"
    for number, row in enumerate(metrics):
        if not isinstance(row, dict) or not _whole(row.get("step")) or not 0 <= row["step"] <= MAX_STEP:
            return f"metrics row {number} is {_shown(row)}, not a row of numbers with its step"
        wrong = next((key for key, value in row.items() if not _number_or_none(value)), None)
        if wrong is not None:
            return f"metrics row {number}: {_shown(wrong)} is {_shown(row[wrong])}, not a number"
    return None


def _file_metadata(path: Path) -> str:
    """The llmviz description stored in a single-file checkpoint's metadata (reads the header only)."""
    from safetensors import SafetensorError, safe_open

    regular_file(path)
    refuse_pickle(path)
    try:
        with safe_open(str(path), "pt") as handle:
            metadata = handle.metadata() or {}
    except (SafetensorError, OSError) as error:
        raise CheckpointError(
            f"{path.name} is not a valid safetensors file (truncated or corrupted?): {error}"
        ) from None
    if "llmviz" not in metadata:
        raise CheckpointError(f"{path.name} is a safetensors file, but not one llmviz wrote (no model description).")
    return metadata["llmviz"]


def _check_sizes(sizes: dict) -> None:
    """Refuse a described size outside what llmviz loads (:data:`llmviz.models.gpt.SIZE_LIMITS`, the experts).

    >>> _check_sizes({"d_model": 64, "n_experts": 0})
    >>> _check_sizes({"d_model": True})
    Traceback (most recent call last):
    ...
    llmviz.errors.ConfigError: d_model = True is outside what llmviz loads (1 to 16,384)
    """
    for name, limit in SIZE_LIMITS.items():
        value = sizes.get(name)
        if value is not None and (not _whole(value) or not 1 <= value <= limit):
            raise ConfigError(f"{name} = {value!r} is outside what llmviz loads (1 to {limit:,})")
    experts = sizes.get("n_experts", 0)
    if not _whole(experts) or not 0 <= experts <= MAX_EXPERTS:
        raise ConfigError(f"n_experts = {experts!r} is outside what llmviz loads (0 to {MAX_EXPERTS})")


def _described_shapes(description: dict) -> dict[str, tuple[int, ...]]:
    """The tensor shapes the description promises, found on the meta device (no memory), after sanity bounds: each
    size within :data:`llmviz.models.gpt.SIZE_LIMITS`, and a GPT within ``LLMVIZ_MAX_PARAMETERS`` and the machine's
    memory (``llmviz.models.gpt.size_problem``, from its sizes, before anything is built)."""
    sizes = dict(description.get("config", {}))
    sizes.update({k: v for k, v in description.get("kwargs", {}).items()})
    if "vocab_size" in description:
        sizes["vocab_size"] = description["vocab_size"]
    _check_sizes(sizes)
    if description.get("kind") == "gpt":  # its size, before even the skeleton is made
        problem = size_problem(GPTConfig(**description.get("config", {})))
        if problem is not None:
            raise ConfigError(problem)
    with torch.device("meta"):
        skeleton = model_from_description(description)
    shapes = {name: tuple(tensor.shape) for name, tensor in skeleton.state_dict().items()}
    if isinstance(skeleton, GPT) and skeleton.config.tie_weights:
        shapes.pop("lm_head.weight", None)
    return shapes


def _check_weights_match(path: Path, expected: dict[str, tuple[int, ...]]) -> None:
    """Compare the safetensors header (names and shapes) with the description, reading no tensor data."""
    if regular_file(path).st_size == 0:
        raise CheckpointError(f"{path.name} is empty.")
    found = header_shapes(path)
    if found is None:
        read_safetensors(path)  # gives the clear message for pickles, truncated and corrupted files
        raise CheckpointError(f"{path.name} is not a valid safetensors file.")
    if found != expected:
        missing = sorted(set(expected) - set(found))[:3]
        extra = sorted(set(found) - set(expected))[:3]
        wrong = [
            f"{n} {found[n]} instead of {expected[n]}" for n in expected if n in found and found[n] != expected[n]
        ][:3]
        details = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unexpected {', '.join(extra)}" if extra else "",
                ", ".join(wrong),
            )
            if part
        )
        raise CheckpointError(f"The weights in {path.name} do not match the model described in {META_FILE}: {details}.")


def inspect_checkpoint(directory: str | Path) -> tuple[dict, Path]:
    """``(description, weights file)`` of a checkpoint folder or single file, checked without reading any
    tensor data: regular files only, a sane description whose promised shapes match the weights' header.

    Every problem is a :class:`CheckpointError` whose message names files, never the server's folders.
    """
    directory = Path(directory)
    label = directory.name or str(directory)
    single_file = directory.suffix == ".safetensors" or directory.is_file()
    meta_path = directory / META_FILE
    if single_file:
        weights = directory
        meta = parse_description(_file_metadata(directory), f"{label}'s description")
    else:
        if not os.path.lexists(meta_path):
            if not directory.is_dir():
                raise CheckpointError(f"No checkpoint named {label}.")
            raise CheckpointError(f"{label} is not an llmviz checkpoint (no {META_FILE}).")
        weights = directory / MODEL_FILE
        meta = parse_description(_read_regular_file(meta_path, MAX_META_BYTES))
    problem = description_problem(meta)
    if problem is not None:
        raise CheckpointError(f"{META_FILE} in {label} is damaged: {problem}.")
    try:
        # nothing is allocated before the description is known to be sane and to match the file's tensors
        _check_weights_match(weights, _described_shapes(meta["model"]))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, ConfigError, TokenizerError) as error:
        raise CheckpointError(f"{META_FILE} in {label} is damaged: {error}") from None
    problem = tokenizer_problem(meta)
    if problem is not None:
        raise CheckpointError(f"The tokenizer in {label}'s {META_FILE} is damaged: {problem}")
    return meta, weights


def tokenizer_problem(meta: dict) -> str | None:
    """What is wrong with a checkpoint's tokenizer (None: nothing), found when a runs folder is listed rather than when
    a student picks it: it must build (a BPE's merges join tokens that exist) and, for a GPT, have the model's
    vocabulary. A few milliseconds (the shipped GPT's 3,839 merges: 15 ms), cached with the listing.

    >>> tokenizer_problem({"tokenizer": {"type": "char", "chars": "ab"}, "model": {"kind": "gpt", "config": {}}})
    >>> tokenizer_problem({"tokenizer": {"type": "byte-bpe", "merges": [{"pair": [32, 999999], "new_id": 256}]}})
    'Merge 0 joins tokens 32, 999999: a merge joins two tokens that exist before it (ids 0 to 255).'
    """
    try:
        tokenizer = tokenizer_from_dict(meta["tokenizer"])
    except TokenizerError as error:
        return str(error)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as error:
        return f"it cannot be rebuilt ({type(error).__name__}: {error!s:.80})."
    model = meta.get("model", {})
    expected = model.get("config", {}).get("vocab_size") if model.get("kind") == "gpt" else None
    if expected is not None and expected != tokenizer.vocab_size:
        return f"it has {tokenizer.vocab_size:,} tokens, the model {expected:,}."
    return None


def weights_problem(state: dict[str, torch.Tensor]) -> str | None:
    """What is wrong with a model's weights as numbers (None: nothing): NaN or infinite values, which every number
    computed from them (a loss, a quantization report, a sample) would carry. The command line refuses such a
    model before it reports on it; the app's pages load it and say "NaN" where a number cannot be computed.

    >>> weights_problem({"w": torch.ones(3)}) is None
    True
    >>> weights_problem({"a": torch.ones(2), "b": torch.tensor([1, float("nan")])})
    'holds 1 NaN or infinite weight (in b)'
    """
    bad = {name: int((~torch.isfinite(t)).sum()) for name, t in state.items() if t.is_floating_point()}
    bad = {name: count for name, count in bad.items() if count}
    if not bad:
        return None
    total = sum(bad.values())
    return f"holds {total:,} NaN or infinite weight{'s' if total != 1 else ''} (in {', '.join(list(bad)[:3])})"


def load_checkpoint(directory: str | Path, device: str = "cpu") -> tuple[nn.Module, Tokenizer, dict]:
    """``(model, tokenizer, metadata)`` from a checkpoint folder (:func:`save_checkpoint`) or a single
    ``.safetensors`` file (:func:`checkpoint_file_bytes`)."""
    label = Path(directory).name or str(directory)
    meta, weights = inspect_checkpoint(directory)
    try:
        model = model_from_description(meta["model"])
        tokenizer = tokenizer_from_dict(meta["tokenizer"])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, ConfigError, TokenizerError) as error:
        raise CheckpointError(f"{META_FILE} in {label} is damaged: {error}") from None
    state = read_safetensors(weights)
    if isinstance(model, GPT) and model.config.tie_weights:
        if "tok_emb.weight" in state:
            state.setdefault("lm_head.weight", state["tok_emb.weight"])
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        first = str(error).splitlines()[:3]
        raise CheckpointError(
            f"The weights do not match the model described in {META_FILE}: {' '.join(first)}"
        ) from None
    if tokenizer.vocab_size != getattr(model, "vocab_size", None) and not isinstance(model, GPT):
        raise CheckpointError("The tokenizer's vocabulary does not match the model's.")
    if isinstance(model, GPT) and model.config.vocab_size != tokenizer.vocab_size:
        raise CheckpointError("The tokenizer's vocabulary does not match the model's.")
    model.to(device).eval()
    return model, tokenizer, meta


@dataclass(frozen=True)
class ListedCheckpoint:
    """One entry of a runs folder: a checkpoint that loads (``problem`` None) or one that cannot, and why."""

    name: str  # the entry's file or folder name
    path: Path
    problem: str | None = None

    @property
    def readable(self) -> bool:
        return self.problem is None


def checkpoint_signature(path: Path) -> tuple:
    """What changes when a checkpoint entry (or the files in it) changes: for caching a check or a loaded model."""
    parts: list[tuple[int, int, int, int] | None] = []
    for candidate in (path, path / META_FILE, path / MODEL_FILE):
        try:
            status = candidate.stat()
            parts.append((status.st_mode, status.st_ino, status.st_size, status.st_mtime_ns))
        except OSError:
            parts.append(None)
    return tuple(parts)


@functools.lru_cache(maxsize=512)
def _problem(path: str, signature: tuple) -> str | None:
    try:
        inspect_checkpoint(path)
    except CheckpointError as error:
        return str(error)
    except (OSError, RecursionError, MemoryError, ValueError) as error:  # anything else a crafted entry provokes
        return f"it cannot be read ({type(error).__name__})."
    return None


def list_checkpoints(folder: str | Path) -> list[ListedCheckpoint]:
    """Every checkpoint in a runs folder, sorted by name, each checked (cached until it changes).

    Listed: folders holding a ``checkpoint.json`` and ``.safetensors`` files; also any entry that is a device,
    pipe, socket or dangling link (there is nothing else it could be meant as). One bad entry is listed with its
    problem and never stops the others. Hidden entries (``.name``) and other files are left out.
    """
    try:
        children = sorted(Path(folder).iterdir())
    except OSError:
        return []
    listed = []
    for path in children:
        if path.name.startswith("."):
            continue
        try:
            mode = path.stat().st_mode
        except OSError:
            mode = None  # a dangling link or a loop
        is_dir = mode is not None and stat.S_ISDIR(mode)
        special = mode is None or not (is_dir or stat.S_ISREG(mode))
        if not (special or path.suffix == ".safetensors" or (is_dir and os.path.lexists(path / META_FILE))):
            continue
        name = printable_name(path.name)
        if name != path.name:  # bytes that are not UTF-8: no page, link or message can carry this name
            listed.append(ListedCheckpoint(name, path, "its name is not valid UTF-8: rename it."))
            continue
        listed.append(ListedCheckpoint(name, path, _problem(str(path), checkpoint_signature(path))))
    return listed


def printable_name(name: str) -> str:
    """A file name as text any page can show: bytes that are not UTF-8 (kept by Python as lone surrogates,
    which cannot be encoded to send to a browser or put in a link) become U+FFFD.

    >>> import os
    >>> printable_name("run-1"), printable_name(os.fsdecode(b"bad\\xffname")) == "bad\\ufffdname"
    ('run-1', True)
    """
    return "".join("\ufffd" if "\ud800" <= character <= "\udfff" else character for character in name)


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return mps is not None and mps.is_available()


def accelerator_rng_states() -> dict[str, torch.Tensor]:
    """The CUDA and MPS random states (dropout on a GPU draws from these), when present."""
    states = {}
    if torch.cuda.is_available():
        states["rng.cuda"] = torch.cuda.get_rng_state().cpu()
    if _mps_available():
        states["rng.mps"] = torch.mps.get_rng_state().cpu()
    return states


def restore_accelerator_rng_states(state: dict[str, torch.Tensor]) -> None:
    """Put back the CUDA and MPS random states a checkpoint saved, where this machine has them."""
    if "rng.cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["rng.cuda"])
    if "rng.mps" in state and _mps_available():
        torch.mps.set_rng_state(state["rng.mps"])


# ---------------------------------------------------------------------------- writing and resuming a run


def _nearest_existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists (where a new folder would be made)."""
    path = Path(os.path.abspath(path))
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def output_folder_problem(path: str | Path) -> str | None:
    """Why a checkpoint folder cannot be written at ``path`` (None: it can), checked before a run trains: an
    existing file or device (``/dev/null``) is not a folder, and a folder that cannot be written fails the run
    only after all its training otherwise.

    >>> output_folder_problem("/dev/null")
    '/dev/null exists and is not a folder (a device): a checkpoint is a folder, new or existing'
    """
    target = Path(path)
    if os.path.lexists(target):
        if not target.is_dir():
            kind = "a file" if target.is_file() else "a device" if target.exists() else "a broken link"
            return f"{path} exists and is not a folder ({kind}): a checkpoint is a folder, new or existing"
        if not os.access(target, os.W_OK | os.X_OK):
            return f"the folder {path} cannot be written (permissions)"
        return None
    parent = _nearest_existing(target)
    if not parent.is_dir():
        return f"{parent} is not a folder, so {path} cannot be made in it"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{path} cannot be made: the folder {parent} cannot be written (permissions)"
    return None


def checkpoint_bytes(parameters: int, state_per_parameter: int = 0, metrics_rows: int = 0, vocab_size: int = 0) -> int:
    """About how many bytes a checkpoint folder takes: the float32 weights, the optimizer's state (numbers per
    parameter, 0 without ``trainer.safetensors``), the metrics and the tokenizer in ``checkpoint.json``.

    >>> checkpoint_bytes(1_000_000, 2, 500, 512) // 2**20
    12
    """
    return 4 * parameters * (1 + state_per_parameter) + 300 * metrics_rows + 100 * vocab_size + 2**20


def free_space_problem(path: str | Path, needed: int) -> str | None:
    """Why the disk at ``path`` cannot take ``needed`` more bytes (None: it can)."""
    import shutil

    where = _nearest_existing(Path(path))
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return None  # nothing to say before trying
    if needed > free:
        return (
            f"the checkpoint needs about {needed / 2**20:,.0f} MB and the disk of {where} has "
            f"{free / 2**20:,.0f} MB free"
        )
    return None


def write_or_keep(out: str | Path, write: Callable[[Path], object]) -> None:
    """``write(out)``; should the disk refuse (full, or made read-only meanwhile), write to a new temporary folder
    instead and say where, so that a run that trained for an hour is never lost to its last step."""
    import tempfile

    try:
        write(Path(out))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        try:
            fallback = Path(tempfile.mkdtemp(prefix="llmviz-unsaved-"))
            write(fallback)
        except OSError as second:
            raise CheckpointError(
                f"Cannot write the checkpoint to {out} ({reason}), nor to a temporary folder "
                f"({second.strerror or type(second).__name__}): the run is lost."
            ) from None
        raise CheckpointError(
            f"Cannot write the checkpoint to {out} ({reason}); it was saved to {fallback} instead."
        ) from None


class SavedRun(Protocol):
    """What writing a checkpoint reads from a run, and resuming writes back: a :class:`llmviz.training.trainer.Trainer`
    (named by its parts here, since llmviz.training.trainer imports this module)."""

    model: nn.Module
    step: int
    train_generator: torch.Generator
    val_generator: torch.Generator
    dropout_generator: torch.Generator

    @property
    def config(self) -> Any: ...  # a TrainConfig (a dataclass)

    def describe(self) -> dict: ...  # the runner contract (llmviz.jobs.runners): its "tokenizer" is saved

    @property
    def history(self) -> list[Any]: ...  # StepMetrics (dataclasses)

    @property
    def optimizer(self) -> torch.optim.Optimizer | None: ...

    @property
    def group(self) -> Any: ...  # a ProcessGroup: .is_main

    @property
    def sharded(self) -> bool: ...


def training_tensors(trainer: SavedRun) -> tuple[dict[str, torch.Tensor], list]:
    """What a run needs besides its weights to go on exactly, as named CPU tensors, and the optimizer's parameter
    groups (plain JSON: learning rate, betas, weight decay, …): the random streams of its batches (``rng.train``,
    ``rng.val``), of its dropout (``rng.dropout``, rank 0's) and of torch (``rng.torch``, and CUDA's or MPS's),
    fp16's loss scale, and every optimizer state as ``optimizer.<parameter index>.<name>`` (AdamW: ``exp_avg``,
    ``exp_avg_sq`` and ``step``)."""
    tensors = {
        "rng.train": trainer.train_generator.get_state(),
        "rng.val": trainer.val_generator.get_state(),
        "rng.dropout": trainer.dropout_generator.get_state(),  # rank 0's: the process that saves
        "rng.torch": torch.get_rng_state(),
        **accelerator_rng_states(),
    }
    scaler = getattr(trainer, "grad_scaler", None)
    if scaler is not None:  # fp16: the loss scale the run reached, so a resumed run scales as this one would
        scaler_state = scaler.state_dict()
        tensors["amp.scale"] = torch.tensor(scaler_state["scale"], dtype=torch.float64)
        tensors["amp.growth_tracker"] = torch.tensor(scaler_state["_growth_tracker"], dtype=torch.int64)
    groups: list = []
    if trainer.optimizer is not None:
        optimizer_state = trainer.optimizer.state_dict()
        for index, values in optimizer_state["state"].items():
            for key, value in values.items():
                tensors[f"optimizer.{index}.{key}"] = torch.as_tensor(value).detach().clone().cpu()
        groups = optimizer_state["param_groups"]
    return tensors, groups


def save_checkpoint(
    directory: str | Path, trainer: SavedRun, extra: dict | None = None, trainer_state: bool = True
) -> Path:
    """``model.safetensors`` (weights), ``trainer.safetensors`` (optimizer and RNG state) and
    ``checkpoint.json`` (configs, tokenizer, metrics): no pickle anywhere."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(model_state(trainer.model), str(directory / MODEL_FILE))

    tensors, groups = training_tensors(trainer)
    if trainer_state:  # shipped artifacts leave it out: they are for using, not resuming
        save_file(tensors, str(directory / STATE_FILE))

    meta = checkpoint_metadata(trainer, groups, extra)
    (directory / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return directory


def checkpoint_metadata(trainer: SavedRun, optimizer_groups: list | None = None, extra: dict | None = None) -> dict:
    """What ``checkpoint.json`` holds: the step, the training config, the model's description, the tokenizer,
    the optimizer's parameter groups, every step's metrics and the final losses (plus ``extra``)."""
    return {
        "format": "llmviz-checkpoint",
        "version": 1,
        "step": trainer.step,
        "train_config": asdict(trainer.config),
        "model": model_description(trainer.model),
        "tokenizer": trainer.describe()[
            "tokenizer"
        ].to_dict(),  # every kind of run says it (a names run has no Dataset)
        "optimizer_param_groups": optimizer_groups or [],
        "metrics": [asdict(m) for m in trainer.history],
        "final": {
            "train_loss": trainer.history[-1].train_loss if trainer.history else None,
            "val_loss": next((m.val_loss for m in reversed(trainer.history) if m.val_loss is not None), None),
        },
        **(extra or {}),
    }


def checkpoint_file_bytes(trainer: SavedRun) -> bytes:
    """One self-contained ``.safetensors`` file (weights, with configs and tokenizer in its metadata)."""
    from safetensors.torch import save

    if trainer.sharded:
        raise CheckpointError(
            "no single-file copy of a run sharded with FSDP while its weights are spread over "
            "the processes; the checkpoint folder is written once rank 0 has gathered them "
            "(Trainer.unshard() on every process)."
        )

    return save(model_state(trainer.model), metadata={"llmviz": json.dumps(checkpoint_metadata(trainer))})


def restore_training_state(trainer: SavedRun, directory: str | Path, model: nn.Module, meta: dict) -> bool:
    """Put a freshly built run back where the checkpoint in ``directory`` stopped: the weights of ``model`` (read
    by :func:`load_checkpoint`, with its ``meta``), the random streams and the optimizer's state, in one process
    or sharded over several. Returns whether this process's dropout stream was restored: only rank 0's is saved,
    so the caller seeds the others afresh."""
    if trainer.sharded:  # each process keeps its shard of the full weights every process read
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        set_model_state_dict(trainer.model, model.state_dict(), options=StateDictOptions(full_state_dict=True))
    else:
        trainer.model.load_state_dict(model.state_dict())
    return restore_training_tensors(
        trainer, read_safetensors(Path(directory) / STATE_FILE), meta["optimizer_param_groups"]
    )


def restore_training_tensors(trainer: SavedRun, state: dict[str, torch.Tensor], groups: list) -> bool:
    """Put back what :func:`training_tensors` took (the weights are the caller's), in one process or sharded over
    several; ``groups``: the optimizer's parameter groups it returned. Returns whether this process's dropout stream
    was restored (only rank 0's is saved, and a CPU's cannot go to a GPU): the caller seeds it afresh otherwise."""
    trainer.train_generator.set_state(state["rng.train"])
    trainer.val_generator.set_state(state["rng.val"])
    dropout_restored = _restore_dropout_stream(trainer, state)
    torch.set_rng_state(state["rng.torch"])
    restore_accelerator_rng_states(state)
    scaler = getattr(trainer, "grad_scaler", None)
    if scaler is not None and "amp.scale" in state:
        scaler.load_state_dict(
            {
                **scaler.state_dict(),
                "scale": float(state["amp.scale"]),
                "_growth_tracker": int(state["amp.growth_tracker"]),
            }
        )
    if trainer.optimizer is not None:
        _restore_optimizer(trainer, state, groups)
    return dropout_restored


def _restore_dropout_stream(trainer: SavedRun, state: dict[str, torch.Tensor]) -> bool:
    """Rank 0's dropout stream, where it was saved and this device can take it (a CPU's state cannot go to a GPU)."""
    if not trainer.group.is_main or "rng.dropout" not in state:
        return False
    try:  # saved on a CPU or a GPU: the two states differ in form, and one cannot take the other
        trainer.dropout_generator.set_state(state["rng.dropout"])
    except RuntimeError:
        return False
    return True


def _restore_optimizer(trainer: SavedRun, state: dict[str, torch.Tensor], groups: list) -> None:
    """The optimizer's moments and step counts (``optimizer.<index>.<name>``) with its parameter groups; sharded
    (FSDP) by each parameter's name."""
    optimizer = trainer.optimizer
    assert optimizer is not None  # the caller's check
    optimizer_state: dict = {"state": {}, "param_groups": groups}
    for key, value in state.items():
        if key.startswith("optimizer."):
            _, index, name = key.split(".", 2)
            optimizer_state["state"].setdefault(int(index), {})[name] = value
    if not trainer.sharded:
        optimizer.load_state_dict(optimizer_state)
        return
    # FSDP names each parameter's state by the parameter's name, and shards it
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    names = {id(p): name for name, p in trainer.model.named_parameters()}
    order = [names[id(p)] for group in optimizer.param_groups for p in group["params"]]
    optimizer_state = {
        "state": {order[i]: value for i, value in optimizer_state["state"].items()},
        "param_groups": [
            {**saved, "params": [order[i] for i in saved["params"]]} for saved in optimizer_state["param_groups"]
        ],
    }
    set_optimizer_state_dict(trainer.model, optimizer, optimizer_state, options=StateDictOptions(full_state_dict=True))


# ---------------------------------------------------------------------------- a kept run's resume state (the lab)

RESUME_FORMAT = "llmviz-resume"
HISTORY_COLUMNS = ("step", "train_loss", "val_loss", "perplexity", "lr", "tokens_per_s", "grad_norm", "elapsed_s")


def history_tensor(history: list) -> torch.Tensor:
    """A run's metrics so far as one float64 tensor, (steps, 8) in :data:`HISTORY_COLUMNS`' order (a step without
    a validation loss: NaN); float64 holds every Python float and step exactly.

    >>> from types import SimpleNamespace as Row
    >>> history_tensor([Row(step=1, train_loss=2.5, val_loss=None, perplexity=12.2, lr=0.1, tokens_per_s=9.0,
    ...                     grad_norm=0.5, elapsed_s=0.25)]).tolist()
    [[1.0, 2.5, nan, 12.2, 0.1, 9.0, 0.5, 0.25]]
    """
    rows = [[float("nan") if getattr(m, c) is None else float(getattr(m, c)) for c in HISTORY_COLUMNS] for m in history]
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rows), len(HISTORY_COLUMNS))  # (steps, 8)


def history_rows(table: torch.Tensor) -> list[dict]:
    """:func:`history_tensor` read back: one dict of StepMetrics' fields per step.

    >>> history_rows(torch.tensor([[3.0, 2.5, float("nan"), 12.2, 0.1, 9.0, 0.5, 0.25]], dtype=torch.float64))
    [{'step': 3, 'train_loss': 2.5, 'val_loss': None, 'perplexity': 12.2, 'lr': 0.1, 'tokens_per_s': 9.0, \
'grad_norm': 0.5, 'elapsed_s': 0.25}]
    """
    if table.dim() != 2 or table.shape[1] != len(HISTORY_COLUMNS) or table.dtype != torch.float64:
        raise CheckpointError(f"A resume state's history has the wrong shape {tuple(table.shape)} or type.")
    rows = []
    for values in table.tolist():
        row = dict(zip(HISTORY_COLUMNS, values))
        row["step"] = int(row["step"])
        row["val_loss"] = None if row["val_loss"] != row["val_loss"] else row["val_loss"]
        rows.append(row)
    return rows


def training_state(trainer: SavedRun) -> tuple[dict[str, torch.Tensor], dict]:
    """Everything a run needs besides its weights to go on as if it had never stopped, for the lab to keep beside
    a snapshot: ``(tensors, scalars)``, the tensors for a safetensors file (:func:`training_tensors`: the optimizer's
    moments and step counts, the random streams of the batches and the dropout, and ``history``: the metrics so far,
    :func:`history_tensor`) and the scalars plain JSON (the step, the optimizer's parameter groups). The learning
    rate schedule is a function of the step (:func:`llmviz.training.trainer.learning_rate`): the step is its
    position."""
    tensors, groups = training_tensors(trainer)
    tensors["history"] = history_tensor(trainer.history)
    scalars = {
        "format": RESUME_FORMAT,
        "version": 1,
        "step": int(trainer.step),
        "optimizer_param_groups": groups,
        "history_columns": list(HISTORY_COLUMNS),
    }
    return tensors, scalars


def resume_state_problem(tensors: dict[str, torch.Tensor], scalars: dict) -> str | None:
    """Why ``(tensors, scalars)`` is not a resume state :func:`training_state` wrote (None: it is one).

    >>> resume_state_problem({}, {"format": "something else"})
    'it is not an llmviz resume state'
    """
    if not isinstance(scalars, dict) or scalars.get("format") != RESUME_FORMAT or scalars.get("version") != 1:
        return "it is not an llmviz resume state"
    if not _whole(scalars.get("step")) or scalars["step"] < 0:
        return "its step is not a whole number ≥ 0"
    if not isinstance(scalars.get("optimizer_param_groups"), list):
        return "its optimizer's parameter groups are missing"
    missing = [name for name in ("rng.train", "rng.val", "rng.torch", "history") if name not in tensors]
    if missing:
        return f"it lacks {', '.join(missing)}"
    return None


def load_training_state(trainer: SavedRun, tensors: dict[str, torch.Tensor], scalars: dict) -> tuple[list[dict], bool]:
    """Put :func:`training_state`'s ``(tensors, scalars)`` back into a freshly built run that has the weights of that
    step already: its step, random streams and optimizer state. Returns the history's rows (the caller makes its
    metrics of them) and whether the dropout stream was restored (a CPU's cannot go to a GPU: the caller then seeds
    it afresh from the step)."""
    problem = resume_state_problem(tensors, scalars)
    if problem:
        raise CheckpointError(f"The run's kept optimizer state cannot be used: {problem}.")
    rows = history_rows(tensors["history"])
    trainer.step = int(scalars["step"])
    return rows, restore_training_tensors(trainer, tensors, scalars["optimizer_param_groups"])
