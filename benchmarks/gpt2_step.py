"""A bf16 training step on GPT-2 small's shape: llmviz's Trainer against transformers' GPT2LMHeadModel, in TFLOP/s.

    python benchmarks/gpt2_step.py [--steps 60] [--round-steps 10] [--quick]  # on a CUDA GPU (on the CPU or with
                                                                              # --quick: a small shape, float32)
    python benchmarks/gpt2_step.py --profile  # where llmviz's step spends its device time (PyTorch's profiler)

GPT-2 small exactly (12 layers, 12 heads, d 768, context 1,024, vocabulary 50,257, biases, a tied head: 124,439,808
parameters on both sides), batch 16 × 1,024 random tokens, no dropout, AdamW (fused on CUDA), gradient clipping at
1.0, bf16 autocast, uncompiled. llmviz trains with its Trainer as the command line does (``claim_process``; the
losses read back at the end of each round); the transformers model with the loop nanoGPT writes (its loss read back at
the end of each round too). The two step in alternating rounds of ``--round-steps`` steps (the side that goes first
alternating, after a warm-up round each: ``benchmarks/_rounds.py``) until each has taken ``--steps``, so that a change
in the load falls on both; a step's time is its side's median round over the round's steps, and the speed is reported
as the median per-round ratio with its spread, beside the load average. TFLOP/s count
6 · N + 12 · L · T · d per token (nanoGPT's estimate_mfu), N = the weights of the matrices (the head included); the
GPU's bf16 matmul peak is measured in the same run (8,192² matrices). Budget: llmviz ≥ 300 TFLOP/s on an H100-class
GPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from _rounds import alternate, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.training.config import TrainConfig  # noqa: E402
from llmviz.training.dataset import Dataset  # noqa: E402
from llmviz.training.trainer import Trainer  # noqa: E402

H100_CLASS = ("H100", "H200", "H800", "GH200", "B200", "B100")


@dataclass(frozen=True)
class Shape:
    vocab: int
    context: int
    d_model: int
    layers: int
    heads: int
    batch: int


GPT2_SMALL = Shape(50257, 1024, 768, 12, 12, 16)
SMOKE = Shape(512, 64, 64, 2, 4, 4)


class _Vocabulary:
    """The only thing a Trainer asks of a tokenizer when it is given its ids: the vocabulary size."""

    def __init__(self, size: int):
        self.vocab_size = size


@dataclass(frozen=True)
class Measure:
    device_name: str
    precision: str
    llmviz_ms: float
    llmviz_tflops: float
    hf_ms: float | None
    hf_tflops: float | None
    peak_tflops: float | None
    per_round: str | None = None  # transformers' time over llmviz's, per round: the median and its spread

    @property
    def h100_class(self) -> bool:
        return any(name in self.device_name for name in H100_CLASS)

    def summary(self) -> str:
        text = (
            f"{self.device_name}, {self.precision}: llmviz {self.llmviz_tflops:.1f} TFLOP/s ({self.llmviz_ms:.1f} ms)"
        )
        if self.hf_tflops is not None and self.hf_ms is not None:
            text += f", transformers {self.hf_tflops:.1f} ({self.hf_ms:.1f} ms)"
        if self.per_round is not None:
            text += f"; llmviz's speed over transformers', per round: {self.per_round}"
        if self.peak_tflops is not None:
            text += f"; matmul peak {self.peak_tflops:.0f} TFLOP/s"
        return text


def flops_per_token(model: nn.Module, shape: Shape) -> float:
    matrices = {id(m.weight): m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear)}
    matrices.update(  # transformers' GPT-2 writes its projections as Conv1D (a Linear with its weight transposed)
        {id(m.weight): m.weight.numel() for m in model.modules() if type(m).__name__ == "Conv1D"}
    )
    return 6 * sum(matrices.values()) + 12 * shape.layers * shape.context * shape.d_model


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def llmviz_side(
    shape: Shape, device: str, precision: str, rounds: int, round_steps: int, compile_model: bool = False
) -> tuple[Callable[[], None], Callable[[], None], nn.Module]:
    """llmviz's Trainer as the command line runs it: a function that trains one round (``round_steps`` steps, the
    losses read back at its end), one that finishes the run, and the model."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, shape.vocab, (200_000,), generator=generator)
    config = TrainConfig(
        model="gpt2-124m",
        context_length=shape.context,
        batch_size=shape.batch,
        steps=round_steps * (1 + rounds) + 1,  # a warm-up round, the rounds, and a last step that evaluates
        lr=6e-4,
        warmup_steps=10,
        eval_interval=10_000,
        eval_batches=1,
        d_model=shape.d_model,
        n_layers=shape.layers,
        n_heads=shape.heads,
        architecture={"qkv_bias": True, "tie_weights": True},  # GPT-2 itself
        device=device,
        precision=precision,
        compile=compile_model,
    )
    trainer = Trainer(config, Dataset(_Vocabulary(shape.vocab), ids[:180_000], ids[180_000:]))  # type: ignore[arg-type]
    trainer.claim_process()
    trainer.report_every = round_steps  # the generator trains up to a report step, then yields its steps one by one
    run = trainer.run()
    torch_device = torch.device(device)

    def one_round() -> None:
        for _ in range(round_steps):
            next(run)
        sync(torch_device)

    def finish() -> None:
        for _ in run:
            pass

    return one_round, finish, trainer.model


def hf_side(shape: Shape, device: str, precision: str, round_steps: int) -> tuple[Callable[[], None], nn.Module] | None:
    """transformers' GPT-2 with the loop nanoGPT writes: a function that trains one round (its loss read back at the
    end, as llmviz's), and the model; None without transformers."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        return None
    config = GPT2Config(
        vocab_size=shape.vocab,
        n_positions=shape.context,
        n_embd=shape.d_model,
        n_layer=shape.layers,
        n_head=shape.heads,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=shape.vocab - 1,
        eos_token_id=shape.vocab - 1,
    )
    config._attn_implementation = "sdpa"
    torch_device = torch.device(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config).to(torch_device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=torch_device.type == "cuda")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    generator = torch.Generator().manual_seed(1)

    def step() -> torch.Tensor:
        x = torch.randint(0, shape.vocab, (shape.batch, shape.context), generator=generator)  # (B, T)
        x = x.pin_memory().to(torch_device, non_blocking=True) if torch_device.type == "cuda" else x
        with torch.autocast(torch_device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    def one_round() -> None:
        for _ in range(round_steps - 1):
            step()
        step().item()
        sync(torch_device)

    return one_round, model


def matmul_peak_tflops(device: str, size: int = 8192, repeats: int = 20) -> float:
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(torch.device(device))
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync(torch.device(device))
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e12


def measure(
    device: str = "cuda",
    smoke: bool = False,
    steps: int = 60,
    compile_model: bool = False,
    compare: bool = True,
    round_steps: int = 10,
) -> Measure:
    """llmviz's step (``compile_model``: torch.compiled) and, with ``compare``, transformers' and the matmul peak: the
    two step in alternating rounds of ``round_steps`` steps (after a warm-up round each), ``steps`` steps each."""
    cuda = device.startswith("cuda")
    shape = SMOKE if smoke or not cuda else GPT2_SMALL
    precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "float32"
    if smoke:
        steps, round_steps = 10, 2
    rounds = max(1, steps // round_steps)
    ours, finish, model = llmviz_side(shape, device, precision, rounds, round_steps, compile_model)
    sides = {"llmviz": ours}
    theirs = hf_side(shape, device, precision, round_steps) if compare else None
    if theirs is not None:
        sides["transformers"] = theirs[0]
    for side in sides.values():
        side()  # the warm-up round
    timed = alternate(sides, rounds)
    finish()
    tokens = shape.batch * shape.context

    def per_step(side: str, module: nn.Module) -> tuple[float, float]:
        ms = 1000 * statistics.median(timed.seconds[side]) / round_steps
        return ms, flops_per_token(module, shape) * tokens / (ms / 1000) / 1e12

    ours_ms, llmviz_tflops = per_step("llmviz", model)
    name = torch.cuda.get_device_name(torch.device(device)) if cuda else "CPU"
    if compile_model:
        precision += ", compiled"
    if theirs is None:
        return Measure(name, precision, ours_ms, llmviz_tflops, None, None, None)
    hf_ms, hf_tflops = per_step("transformers", theirs[1])
    del model, theirs, sides
    peak = matmul_peak_tflops(device) if cuda else None
    return Measure(
        name, precision, ours_ms, llmviz_tflops, hf_ms, hf_tflops, peak, timed.summary("transformers", "llmviz")
    )


def profile(device: str = "cuda", round_steps: int = 5, rows: int = 15, compile_model: bool = False) -> str:
    """Where llmviz's step spends its time: PyTorch's profiler over one round after a warm-up round, the ``rows``
    operators that take the most device time (``self`` time, so a kernel is counted once)."""
    cuda = device.startswith("cuda")
    shape = GPT2_SMALL if cuda else SMOKE
    precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "float32"
    one_round, finish, _ = llmviz_side(shape, device, precision, 2, round_steps, compile_model)
    one_round()  # the warm-up round
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=activities) as profiler:
        one_round()
    finish()
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    return profiler.key_averages().table(sort_by=key, row_limit=rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="timed steps of each side")
    parser.add_argument("--round-steps", type=int, default=10, help="steps of each side in one round")
    parser.add_argument("--quick", action="store_true", help="the small float32 shape, 5 rounds of 2 steps")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--compile", action="store_true", help="torch.compile llmviz's model (transformers' is not)")
    parser.add_argument("--profile", action="store_true", help="print where llmviz's step spends its time, no timing")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile(args.device, compile_model=args.compile))
        return 0
    result = measure(
        args.device,
        smoke=args.quick or not args.device.startswith("cuda"),
        steps=args.steps,
        compile_model=args.compile,
        round_steps=args.round_steps,
    )
    print(result.summary())
    print(f"load average: {load_average()}")
    if result.h100_class:
        ok = result.llmviz_tflops >= 300
        print(f"{'PASS' if ok else 'FAIL'}: llmviz {result.llmviz_tflops:.0f} TFLOP/s ≥ 300 on an H100-class GPU")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
