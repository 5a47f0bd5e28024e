"""A bf16 training step on GPT-2 small's shape: llmviz's Trainer against transformers' GPT2LMHeadModel, in TFLOP/s.

    python benchmarks/gpt2_step.py [--steps 20]     # on a CUDA GPU (on the CPU: a small shape, float32)

GPT-2 small exactly (12 layers, 12 heads, d 768, context 1,024, vocabulary 50,257, biases, a tied head: 124,439,808
parameters on both sides), batch 16 × 1,024 random tokens, no dropout, AdamW (fused on CUDA), gradient clipping at
1.0, bf16 autocast, uncompiled. llmviz trains with its Trainer as the command line does (``claim_process``; the
losses read back every 10 steps); the transformers model with the loop nanoGPT writes (its loss read back every 10
steps too). Each side: 10 warm-up steps, then ``--steps`` timed between two reads of the loss. TFLOP/s count
6 · N + 12 · L · T · d per token (nanoGPT's estimate_mfu), N = the weights of the matrices (the head included); the
GPU's bf16 matmul peak is measured in the same run (8,192² matrices). Budget: llmviz ≥ 300 TFLOP/s on an H100-class
GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

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

    @property
    def h100_class(self) -> bool:
        return any(name in self.device_name for name in H100_CLASS)

    def summary(self) -> str:
        text = (
            f"{self.device_name}, {self.precision}: llmviz {self.llmviz_tflops:.1f} TFLOP/s ({self.llmviz_ms:.1f} ms)"
        )
        if self.hf_tflops is not None and self.hf_ms is not None:
            text += f", transformers {self.hf_tflops:.1f} ({self.hf_ms:.1f} ms): {self.hf_ms / self.llmviz_ms:.2f}×"
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


def llmviz_step_ms(
    shape: Shape, device: str, precision: str, steps: int, compile_model: bool = False
) -> tuple[float, nn.Module]:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, shape.vocab, (200_000,), generator=generator)
    config = TrainConfig(
        model="gpt2-124m",
        context_length=shape.context,
        batch_size=shape.batch,
        steps=10 + steps + 1,  # the last step evaluates: outside the timed ones
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
    trainer.report_every = 10
    run = trainer.run()
    for _ in range(10):  # warm-up; read back at step 10
        next(run)
    torch_device = torch.device(device)
    sync(torch_device)
    start = time.perf_counter()
    for _ in range(steps):
        next(run)
    sync(torch_device)
    seconds = time.perf_counter() - start
    for _ in run:
        pass
    return 1000 * seconds / steps, trainer.model


def hf_step_ms(shape: Shape, device: str, precision: str, steps: int) -> tuple[float, nn.Module] | None:
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

    def step(number: int) -> None:
        x = torch.randint(0, shape.vocab, (shape.batch, shape.context), generator=generator)
        x = x.pin_memory().to(torch_device, non_blocking=True) if torch_device.type == "cuda" else x
        with torch.autocast(torch_device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if number % 10 == 0:
            loss.item()

    for number in range(1, 11):
        step(number)
    sync(torch_device)
    start = time.perf_counter()
    for number in range(1, steps + 1):
        step(number)
    sync(torch_device)
    return 1000 * (time.perf_counter() - start) / steps, model


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
    device: str = "cuda", smoke: bool = False, steps: int = 20, compile_model: bool = False, compare: bool = True
) -> Measure:
    """llmviz's step (``compile_model``: torch.compiled) and, with ``compare``, transformers' and the matmul peak."""
    cuda = device.startswith("cuda")
    shape = SMOKE if smoke or not cuda else GPT2_SMALL
    precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "float32"
    steps = 3 if smoke else steps
    ours_ms, ours = llmviz_step_ms(shape, device, precision, steps, compile_model)
    tokens = shape.batch * shape.context
    llmviz_tflops = flops_per_token(ours, shape) * tokens / (ours_ms / 1000) / 1e12
    del ours
    name = torch.cuda.get_device_name(torch.device(device)) if cuda else "CPU"
    if compile_model:
        precision += ", compiled"
    if not compare:
        return Measure(name, precision, ours_ms, llmviz_tflops, None, None, None)
    hf = hf_step_ms(shape, device, precision, steps)
    hf_ms = hf_tflops = None
    if hf is not None:
        hf_ms, theirs = hf
        hf_tflops = flops_per_token(theirs, shape) * tokens / (hf_ms / 1000) / 1e12
        del theirs
    peak = matmul_peak_tflops(device) if cuda else None
    return Measure(name, precision, ours_ms, llmviz_tflops, hf_ms, hf_tflops, peak)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--compile", action="store_true", help="torch.compile llmviz's model (transformers' is not)")
    args = parser.parse_args(argv)
    result = measure(
        args.device, smoke=not args.device.startswith("cuda"), steps=args.steps, compile_model=args.compile
    )
    print(result.summary())
    if result.h100_class:
        ok = result.llmviz_tflops >= 300
        print(f"{'PASS' if ok else 'FAIL'}: llmviz {result.llmviz_tflops:.0f} TFLOP/s ≥ 300 on an H100-class GPU")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
