"""After pre-training: LoRA vs full fine-tuning, int8/int4 vs float32, gradient checkpointing's memory.

    python benchmarks/adapt.py [--model data/gpt-python-docs] [--steps 30]

1. LoRA (r = 4 on W_Q and W_V) vs full fine-tuning of the same model on the same batches: step time
   (median of the steps, the two stepping in alternating rounds of one step each, with the median per-round ratio
   and its spread: ``benchmarks/_rounds.py``), parameters trained and the AdamW state they need. Reference: full
   fine-tuning.
2. Post-training quantization: bytes and held-out perplexity of int8 and int4 (per channel and per tensor,
   symmetric) vs float32, with the next-token KL divergence. Reference: float32.
3. Activations saved for the backward pass (counted exactly with saved_tensors_hooks) with and without
   gradient checkpointing and bf16 autocast, and the step time. Reference: a plain float32 step.
   On CUDA, torch.cuda.max_memory_allocated is printed too.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from _rounds import Rounds, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.adapt import (
    lora,
    memory,  # noqa: E402
    quantize,  # noqa: E402
)
from llmviz.data import corpus
from llmviz.lessons import adapting
from llmviz.training.checkpoint import load_checkpoint  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data"


def step_times(trainer, steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        trainer.train_step()
        trainer.step += 1
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(DATA / "gpt-python-docs"))
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    model, tokenizer, _ = load_checkpoint(args.model)
    text = corpus.load("python-docs")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{args.model}: {model.num_parameters():,} parameters · {time.strftime('%Y-%m-%d %H:%M')} · CPU "
        f"{os.cpu_count()} cores, {torch.get_num_threads()} threads · load average {load:.1f}\n"
    )

    print("1. LoRA (r = 4, α = 8, W_Q and W_V) vs full fine-tuning, batch 8 × 64, median step time")
    config = lora.LoRAConfig(rank=4, alpha=8, targets=("q", "v"))
    full = adapting.full_run(model, tokenizer, text, args.steps, seed=0)
    low = adapting.lora_run(model, tokenizer, text, config, args.steps, seed=0)
    step_times(full, 3), step_times(low, 3)  # warm-up
    rounds = Rounds()  # one step of each a round, the side that goes first alternating
    for index in range(args.steps):
        for name, trainer in (("full", full), ("LoRA", low)) if index % 2 == 0 else (("LoRA", low), ("full", full)):
            rounds.add(name, step_times(trainer, 1)[0])
    full_ms, low_ms = (statistics.median(rounds.seconds[name]) * 1e3 for name in ("full", "LoRA"))
    counts = lora.memory_comparison(model, config)
    print(f"{'':18} | {'ms/step':>8} | {'trained params':>14} | {'AdamW states':>12} | vs full")
    print("-" * 70)
    for name, ms in (("full fine-tuning", full_ms), ("LoRA", low_ms)):
        c = counts[name]
        print(
            f"{name:18} | {ms:8.1f} | {c.trained_parameters:14,} | {memory.human_bytes(c.optimizer_bytes):>12} | "
            f"{ms / full_ms:.2f}× time"
        )
    print(f"LoRA's step time over full fine-tuning's, per round: {rounds.summary('LoRA', 'full')}")
    print(f"load average now: {load_average()}")

    print("\n2. Post-training quantization, held-out perplexity on the last tenth of python-docs")
    windows = adapting.held_out_ids(tokenizer, text, model, windows=16)
    print(f"{'':34} | {'bytes':>10} | {'size':>6} | {'perplexity':>10} | {'KL (nats)':>9} | same top-1")
    print("-" * 92)
    float_ppl = quantize.compare(model, model, windows).perplexity_before
    print(f"{'float32':34} | {4 * model.num_parameters():10,} | {'1.00×':>6} | {float_ppl:10.3f} | {0:9.4f} | 100.0 %")
    for bits in (8, 4):
        for per_channel in (True, False):
            spec = quantize.QuantSpec(bits, per_channel=per_channel, symmetric=True)
            result = quantize.quantize_model(model, spec)
            c = quantize.compare(model, result.model, windows)
            print(
                f"{spec.title:34} | {result.total_bytes:10,} | {result.total_bytes / result.float_bytes:5.2f}× | "
                f"{c.perplexity_after:10.3f} | {c.kl:9.4f} | {c.top1_agreement:6.1%}"
            )

    print("\n3. One training step, batch 8 × 64: activations saved for backward (exact) and time (median of 5)")
    batch = adapting.held_out_ids(tokenizer, text, model, windows=8)
    inputs, targets = batch[:, :64], batch[:, 1:65]
    print(f"{'checkpointing':>13} | {'bf16':>4} | {'saved':>10} | {'vs plain':>8} | {'ms/step':>8} | loss")
    print("-" * 66)
    plain = None
    for checkpointing in (False, True):
        for bf16 in (False, True):
            runs = [memory.measure_step(model, inputs, targets, checkpointing, bf16) for _ in range(5)]
            m = runs[0]
            plain = plain or m
            ms = statistics.median(r.seconds for r in runs) * 1e3
            cuda = f" | peak CUDA {memory.human_bytes(m.peak_cuda_bytes)}" if m.peak_cuda_bytes else ""
            print(
                f"{'on' if checkpointing else 'off':>13} | {'on' if bf16 else 'off':>4} | "
                f"{memory.human_bytes(m.saved_bytes):>10} | {m.saved_bytes / plain.saved_bytes:7.2f}× | {ms:8.1f} | "
                f"{m.loss:.4f}{cuda}"
            )


if __name__ == "__main__":
    main()
