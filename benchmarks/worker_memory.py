"""How much memory a training worker holds, and how close llmviz's estimate of a run's peak comes.

``python benchmarks/worker_memory.py`` starts workers the way the server does (``JobManager(workers="process")``: a
process forked from the preloaded forkserver) and reads, in each, its resident memory (``VmRSS``), its peak
(``VmHWM``) and the part that is its own (``Private_*`` of ``/proc/self/smaps_rollup``, Linux only):

1. an idle worker, and one after a single step of GPT nano: the worker's own memory
   (:data:`llmviz.training.footprint.WORKER_BYTES`);
2. for a few runs, the worker's peak after 3 steps next to :func:`llmviz.training.footprint.of_config`'s estimate.

The table goes to stdout, with the load average before and after (memory does not depend on the load, but a busy
machine's other processes can leave less of it); dated results are kept in ``docs/benchmarks/worker_memory.md``.
"""

from __future__ import annotations

import datetime
import functools
import platform
import sys

from _app import load_average  # this folder is on sys.path (the class benchmark's helpers)

from llmviz.jobs.manager import JobManager
from llmviz.training import footprint
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import build_tokenizer, prepare_data
from llmviz.training.trainer import Trainer

TEXT = "the quick brown fox jumps over the lazy dog, said the cat to the hen.\n" * 4000


def _memory() -> dict[str, int]:
    found: dict[str, int] = {}
    for name, fields in (("status", ("VmRSS", "VmHWM")), ("smaps_rollup", ("Private_Clean", "Private_Dirty"))):
        try:
            with open(f"/proc/self/{name}", encoding="ascii") as lines:
                for line in lines:
                    key = line.split(":")[0]
                    if key in fields:
                        found[key] = int(line.split()[1]) * 1024
        except OSError:
            pass
    return found


def probe(should_stop, config: TrainConfig | None = None, text: str = ""):
    """A task: the worker's memory before and after training ``config`` for its steps (None: nothing)."""
    before = _memory()
    if config is not None:
        trainer = Trainer(config, prepare_data(text, config, build_tokenizer(text, config.tokenizer)))
        for _ in trainer.run():
            pass
    yield 1, 0.0
    return before, _memory()


RUNS = [
    ("GPT nano, batch 4 × 8", TrainConfig(model="gpt-nano", tokenizer="char", batch_size=4, context_length=8, steps=1)),
    ("GPT micro, batch 16 × 64", TrainConfig(model="gpt-micro", tokenizer="char", batch_size=16, steps=3)),
    (
        "GPT mini, batch 32 × 128",
        TrainConfig(model="gpt-mini", tokenizer="char", batch_size=32, context_length=128, steps=3),
    ),
    (
        "GPT-2 small's shape, batch 4 × 64",
        TrainConfig(model="gpt2-124m", tokenizer="char", batch_size=4, context_length=64, steps=3),
    ),
    ("char MLP, batch 64 × 32", TrainConfig(model="mlp", tokenizer="char", batch_size=64, context_length=32, steps=3)),
]


def main() -> None:
    import worker_memory  # this file as a module (its folder is on sys.path): a worker can unpickle its probe

    probe = worker_memory.probe
    manager = JobManager(max_running=1, workers="process")
    mb = footprint.MB
    print(f"# worker memory · {datetime.date.today()} · {platform.platform()} · Python {sys.version.split()[0]}")
    print(f"load average before: {load_average()}\n")
    idle = manager.submit_task("bench", probe, label="idle", total=1)
    idle.wait(300)
    before, after = idle.result
    print(f"idle worker: resident {before['VmRSS'] / mb:.0f} MB, private {_private(before) / mb:.0f} MB\n")
    print("| run | estimate (MB) | measured peak (MB) | estimate / measured |")
    print("| --- | ---: | ---: | ---: |")
    vocab = build_tokenizer(TEXT, "char").vocab_size
    for title, config in RUNS:
        job = manager.submit_task("bench", functools.partial(probe, config=config, text=TEXT), label=title, total=1)
        job.wait(600)
        if job.result is None:
            print(f"| {title} | failed: {job.status().error} | | |")
            continue
        _, after = job.result
        estimate = footprint.of_config(config, vocab, text_bytes=len(TEXT.encode())).peak_bytes
        print(f"| {title} | {estimate / mb:.0f} | {after['VmHWM'] / mb:.0f} | {estimate / after['VmHWM']:.2f} |")
        if title.startswith("GPT nano"):
            resident, private = after["VmRSS"] / mb, _private(after) / mb
            print(f"|   (worker after one step: resident {resident:.0f} MB, private {private:.0f} MB) | | | |")
    manager.shutdown()
    print(f"\nload average after: {load_average()}")


def _private(memory: dict[str, int]) -> int:
    return memory.get("Private_Clean", 0) + memory.get("Private_Dirty", 0)


if __name__ == "__main__":
    main()
