"""A run's peak memory in a worker started exactly as the lab starts it, next to the estimate it was admitted by.

Each case is what a page submits (the Training page's ``build_trainer``, the Adapting page's fine-tuning and LoRA
races, the Inside page's autoencoder run): a :class:`~llmviz.jobs.manager.JobManager` with process workers takes it
through ``submit_training`` / ``submit_race`` with the page's own footprint, and the worker process's peak resident
memory (``VmHWM`` of ``/proc/<pid>/status``, polled until the process ends; it never goes down) is read. Two starts:

- ``forkserver``: as the server starts workers (forked from the forkserver that preloaded torch and the trainer);
- ``spawn``: a fresh interpreter running the same ``process_entry`` (what a Ray worker, or a platform without a
  forkserver, is: it imports everything itself, and its first step pays for autograd's and the optimizer's
  first use).

``python -m tests.support.worker_peak CASE START`` prints one JSON line (used by the slow tests of
``tests/unit/training/test_footprint.py`` and by ``benchmarks/worker_memory.py``, each case in a process of its own).
Linux only (``/proc``).
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT_FILE = Path("/work/shared/data/tinyshakespeare.txt")
MB = 2**20


TEXT_CHARS = 250_000  # a small run's text: the worker's own memory is most of its peak


def corpus() -> str:
    """The first 250,000 characters of Shakespeare where it is, else of the shipped Python manual (real English)."""
    if TEXT_FILE.is_file():
        return TEXT_FILE.read_text(encoding="utf-8")[:TEXT_CHARS]
    return (ROOT / "data" / "python-manual.txt").read_text(encoding="utf-8")[:TEXT_CHARS]


def _training(changes: dict):
    from llmviz.training import footprint
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import vocab_bound
    from llmviz.training.trainer import build_trainer

    text = corpus()
    config = TrainConfig(**{"steps": 10, "eval_interval": 5, **changes})
    needs = footprint.of_config(config, vocab_bound(text, config), text_bytes=len(text.encode()))
    return [("run", functools.partial(build_trainer, text, config), needs, config.steps)]


def _shipped():
    from llmviz.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    return model, tokenizer


def _fine_tuning(kinds: tuple[str, ...], dropout: float = 0.0):
    from llmviz.adapt import lora
    from llmviz.lessons import adapting

    model, tokenizer = _shipped()
    if dropout:
        from llmviz.models.gpt import GPT

        copy = GPT(model.config.replace(dropout=dropout))
        copy.load_state_dict(model.state_dict())
        model = copy
    text, steps, runs = corpus()[: adapting.MAX_TEXT], 10, []
    for kind in kinds:
        if kind == "full":
            build = functools.partial(adapting.full_run, model, tokenizer, text, steps, 0)
            needs = adapting.lab_footprint(model, len(text), steps, "Full fine-tuning")
        else:  # as the Adapting page starts it
            config = lora.LoRAConfig()
            trained = lora.memory_comparison(model, config)["LoRA"].trained_parameters
            build = functools.partial(adapting.lora_run, model, tokenizer, text, config, steps, 0)
            needs = adapting.lab_footprint(model, len(text), steps, "LoRA", trainable=trained, copies=1)
        runs.append((kind, build, needs, steps))
    return runs


def _autoencoder():
    from llmviz.interpret.sae import input_width
    from llmviz.lessons import inside
    from llmviz.training import footprint

    model, tokenizer = _shipped()
    config = inside.sae_config(layer=model.config.n_layers - 1, point="resid_post", d_sae=1024, k=16, l1=0.0, steps=20)
    text = (ROOT / "data" / "python-manual.txt").read_text(encoding="utf-8")
    text = text[: inside.corpus_chars(model.config, config)]
    build = functools.partial(inside.build_sae_trainer, model, tokenizer, text, config, "shipped")
    needs = footprint.sparse_autoencoder(model.config, config, input_width(model, config))
    return [("sae", build, needs, config.steps)]


#: name → what a page submits: a list of (label, build, footprint, steps) (one: a run; several: a race)
CASES = {
    "gpt-nano": lambda: _training(  # the worker itself: one step of the smallest run
        {"model": "gpt-nano", "tokenizer": "char", "batch_size": 1, "context_length": 8, "steps": 1, "eval_interval": 1}
    ),
    "gpt-micro": lambda: _training({"model": "gpt-micro"}),
    "gpt-micro-dropout": lambda: _training({"model": "gpt-micro", "dropout": 0.2}),
    "gpt-mini": lambda: _training({"model": "gpt-mini", "batch_size": 32, "context_length": 128}),
    "llama-style": lambda: _training({"model": "llama-style", "batch_size": 16, "context_length": 128}),
    "llama-style-dropout": lambda: _training(
        {"model": "llama-style", "batch_size": 16, "context_length": 128, "dropout": 0.2}
    ),
    "gru": lambda: _training({"model": "gru", "tokenizer": "char", "batch_size": 64, "context_length": 32}),
    "mlp": lambda: _training({"model": "mlp", "tokenizer": "char", "batch_size": 64, "context_length": 32}),
    "fine-tune": lambda: _fine_tuning(("full",)),
    "fine-tune-dropout": lambda: _fine_tuning(("full",), 0.2),
    "lora": lambda: _fine_tuning(("lora",)),
    "lora-race": lambda: _fine_tuning(("lora", "full")),  # the Adapting page's race: LoRA vs full fine-tuning
    "sae": _autoencoder,
}


def _peak_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None  # a zombie: its memory is gone


def measure(case: str, start: str = "forkserver") -> dict:
    """Run ``case`` in a worker started by ``start`` ("forkserver" as the server does, or "spawn": a fresh
    interpreter) and return its estimate, the worker's peak and their ratio (bytes)."""
    from llmviz.jobs import processes
    from llmviz.jobs.manager import JobManager
    from llmviz.lab.live_status import Planned

    if start == "spawn":
        processes._CONTEXT = multiprocessing.get_context("spawn")
    runs = CASES[case]()
    manager = JobManager(max_running=1, workers="process")
    try:
        if len(runs) == 1:
            label, build, needs, steps = runs[0]
            jobs = [manager.submit_training("probe", build=build, footprint=needs, label=label, total=steps)]
        else:
            jobs = manager.submit_race("probe", [(r[0], Planned(r[1], r[2], r[3])) for r in runs])
        peak, group = 0, jobs[0].group
        while True:
            process = group.process
            found = _peak_of(process.pid) if process is not None and process.pid else None
            if found is not None:
                peak = max(peak, found)
            elif all(job.status().state.value in ("finished", "failed", "stopped") for job in jobs):
                break
            time.sleep(0.002)
        errors = [job.status().error for job in jobs if job.status().error]
        from llmviz.training.footprint import worker_peak

        estimate = worker_peak([r[2] for r in runs])
    finally:
        manager.shutdown()
    return {
        "case": case,
        "start": start,
        "estimate": estimate,
        "peak": peak,
        "ratio": round(estimate / peak, 3) if peak else None,
        "errors": errors,
    }


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "forkserver")))
