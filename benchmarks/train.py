"""Training step speed: llmviz's GPT vs Hugging Face transformers' GPT2LMHeadModel, same sizes, same batches.

    python benchmarks/train.py [--steps 30] [--device cpu]

Configs: L4 H4 d128 T128 B16 V1024 (the shipped GPT's shape) and a character-level
transformer (L2 H4 d64 T32 B32 V27). Rows: llmviz with intermediates off (the fast path),
Hugging Face, and llmviz recording every intermediate (run_with_cache-style forward +
backward). GFLOP/s use the usual estimate 6·N·tokens + 12·L·T·d·tokens for a training step
(forward and backward), against a float32 matmul peak measured in the same run. The rows step in rounds of one step
each on the same batches, the order reversed every other round (``benchmarks/_rounds.py``): ms/step is each row's
median step, the ratios the median per-round ratio with its spread, beside the load average.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from _rounds import Rounds, alternate, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.models.gpt import GPT, GPTConfig  # noqa: E402


def matmul_peak_gflops(device: str, size: int = 1024, repeats: int = 20) -> float:
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    for _ in range(3):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync(device)
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def hf_model(config: GPTConfig):
    from transformers import GPT2Config, GPT2LMHeadModel

    hf_config = GPT2Config(
        vocab_size=config.vocab_size,
        n_positions=config.context_length,
        n_embd=config.d_model,
        n_layer=config.n_layers,
        n_head=config.n_heads,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
    )
    hf_config._attn_implementation = "sdpa"
    return GPT2LMHeadModel(hf_config)


def time_rounds(steps: dict, batches, device: str) -> Rounds:
    """Each side's step on the same batches, in rounds of one step of each (the order reversed every other round),
    after 3 warm-up steps each."""
    for step in steps.values():
        for inputs, targets in batches[:3]:
            step(inputs, targets)
    sync(device)
    done = dict.fromkeys(steps, 0)

    def one(name: str) -> None:
        steps[name](*batches[done[name]])
        sync(device)
        done[name] += 1

    return alternate({name: lambda name=name: one(name) for name in steps}, len(batches))


def bench(name: str, config: GPTConfig, batch: int, steps: int, device: str, peak: float) -> None:
    torch.manual_seed(0)
    batches = [
        (
            torch.randint(0, config.vocab_size, (batch, config.context_length), device=device),
            torch.randint(0, config.vocab_size, (batch, config.context_length), device=device),
        )
        for _ in range(steps)
    ]
    ours = GPT(config).to(device)
    ours_optimizer = torch.optim.AdamW(ours.parameters(), lr=1e-3)
    hf = hf_model(config).to(device)
    hf_optimizer = torch.optim.AdamW(hf.parameters(), lr=1e-3)

    def step_ours(inputs, targets):
        _, loss = ours(inputs, targets)
        ours_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        ours_optimizer.step()

    def step_ours_recording(inputs, targets):
        cache = {}
        _, loss = ours(inputs, targets, cache=cache)
        ours_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        ours_optimizer.step()

    def step_hf(inputs, targets):
        loss = torch.nn.functional.cross_entropy(hf(input_ids=inputs).logits.flatten(0, 1), targets.flatten())
        hf_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        hf_optimizer.step()

    tokens = batch * config.context_length
    n_params = sum(p.numel() for p in ours.parameters())
    flops = 6 * n_params * tokens + 12 * config.n_layers * config.context_length * config.d_model * tokens
    labels = ("llmviz GPT (intermediates off)", "HF GPT2LMHeadModel (sdpa)", "llmviz GPT (every intermediate recorded)")
    rounds = time_rounds(dict(zip(labels, (step_ours, step_hf, step_ours_recording), strict=True)), batches, device)
    rows = [(label, statistics.median(rounds.seconds[label])) for label in labels]
    print(f"\n{name}: {n_params:,} parameters, {tokens:,} tokens per step, {steps} timed steps on {device}")
    print(f"{'model':<42} | {'ms/step':>8} | {'tokens/s':>10} | {'GFLOP/s':>8} | {'% of peak':>9}")
    print("-" * 90)
    for label, seconds in rows:
        achieved = flops / seconds / 1e9
        print(
            f"{label:<42} | {seconds * 1e3:8.1f} | {tokens / seconds:10,.0f} | {achieved:8.1f} | {achieved / peak:8.1%}"
        )
    print(
        f"llmviz step rate / HF step rate, per round: {rounds.summary(labels[1], labels[0])}\n"
        f"recording intermediates costs, per round: {rounds.summary(labels[2], labels[0])}\n"
        f"load average: {load_average()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    peak = matmul_peak_gflops(args.device)
    print(f"float32 matmul peak measured here: {peak:,.1f} GFLOP/s ({torch.get_num_threads()} threads)")
    bench(
        "L4 H4 d128 T128 B16 V1024",
        GPTConfig(vocab_size=1024, context_length=128, d_model=128, n_heads=4, n_layers=4, dropout=0.0),
        16,
        args.steps,
        args.device,
        peak,
    )
    bench(
        "char-level L2 H4 d64 T32 B32 V27",
        GPTConfig(vocab_size=27, context_length=32, d_model=64, n_heads=4, n_layers=2, dropout=0.0),
        32,
        args.steps,
        args.device,
        peak,
    )
    print("\nTargets: ≥ 0.95× the HF step rate; ≥ 45 % of the measured peak; recording costs ≤ 1.3×.")


if __name__ == "__main__":
    main()
