"""Training on the CPU in float32, bf16 and fp16: one GPT training step's time in each, on this machine's CPU.

    python benchmarks/cpu_precision.py [--steps 5] [--threads 2]

The shipped GPT's shape (L4 H4 d128 T128 B16 V1024), AdamW; bf16 and fp16 under ``torch.autocast("cpu")``, fp16 with
``torch.amp.GradScaler("cpu")`` as on CUDA. Reports the median step time and its ratio to float32, and the CPU's
model name and whether it has native 16-bit float instructions (``avx512_bf16``, ``avx512_fp16``, ``amx_fp16``): where
float16 has none, its matrix products fall back to a slow path (why ``fp16`` is refused on the CPU: see
docs/training.md). Results: docs/benchmarks/cpu_precision.md.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from llmviz.models.gpt import GPT, GPTConfig  # noqa: E402

SHAPE = GPTConfig(vocab_size=1024, context_length=128, d_model=128, n_heads=4, n_layers=4, dropout=0.0)


def cpu_flags() -> tuple[str, list[str]]:
    """The CPU's model name and which 16-bit float instruction sets /proc/cpuinfo lists (Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown", []
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    return name, sorted(flags & {"avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16"})


def step_times(precision: str, steps: int) -> tuple[list[float], float]:
    """Seconds per training step (after one warm-up step) and the last loss."""
    torch.manual_seed(0)
    model = GPT(SHAPE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler("cpu", enabled=precision == "fp16")
    ids = torch.randint(SHAPE.vocab_size, (16, SHAPE.context_length + 1), generator=torch.Generator().manual_seed(1))
    times, loss = [], float("nan")
    for step in range(steps + 1):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            _, loss_tensor = model(ids[:, :-1], ids[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss_tensor).backward()
        scaler.step(optimizer)
        scaler.update()
        loss = float(loss_tensor.detach())
        if step:
            times.append(time.perf_counter() - start)
    return times, loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    name, flags = cpu_flags()
    print(
        f"CPU: {name}; 16-bit float instructions: {', '.join(flags) or 'none'}; torch {torch.__version__}, "
        f"{args.threads} threads, {args.steps} steps"
    )
    base = None
    for precision in ("float32", "bf16", "fp16"):
        times, loss = step_times(precision, args.steps)
        median = statistics.median(times)
        base = base or median
        print(
            f"{precision:8s} median step {median * 1e3:8.1f} ms  ({median / base:5.2f}× float32)  last loss {loss:.4f}"
        )


if __name__ == "__main__":
    main()
