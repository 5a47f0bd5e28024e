"""Generating 200 tokens with the shipped GPT, with and without the KV cache (identical tokens asserted).

    python benchmarks/sampling.py [--tokens 200]

With the cache, each new token runs the model on one position and reuses every earlier key
and value; without it, each token re-runs the whole window. When the text outgrows the
model's context (128 positions), both paths shift the window to its last half (the same rule,
so the same tokens); the cache is rebuilt once there and reused again.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from llmviz.generation.sampling import generate  # noqa: E402
from llmviz.training.checkpoint import load_checkpoint  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data"


def run(model, ids, tokens, use_cache, temperature):
    start = time.perf_counter()
    out = [
        r.token for r in generate(model, ids, tokens, temperature=temperature, top_k=20, seed=0, use_kv_cache=use_cache)
    ]
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=200)
    args = parser.parse_args()
    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")
    ids = tokenizer.encode("The for statement")
    print(
        f"shipped GPT: context {model.config.context_length}, prompt {len(ids)} tokens, {args.tokens} new tokens, "
        f"CPU {torch.get_num_threads()} threads\n"
    )
    inside = model.config.context_length - len(ids)
    print(
        f"{'tokens':>6} | {'decoding':<8} | {'no cache (s)':>12} | {'KV cache (s)':>12} | {'speed-up':>8} | identical"
    )
    print("-" * 75)
    for tokens in (args.tokens, inside):
        for temperature in (0.0, 0.8):
            run(model, ids, 10, True, temperature)
            slow, a = min((run(model, ids, tokens, False, temperature) for _ in range(3)), key=lambda r: r[0])
            fast, b = min((run(model, ids, tokens, True, temperature) for _ in range(3)), key=lambda r: r[0])
            assert a == b, "the KV cache changed the generated tokens"
            label = "greedy" if temperature == 0 else f"T={temperature}"
            print(f"{tokens:>6} | {label:<8} | {slow:12.3f} | {fast:12.3f} | {slow / fast:7.2f}× | {a == b}")
    print(f"\n{inside} tokens fit the context after the prompt; past that, both paths shift the window by half.")
    print("\nTarget: the cache at least 1.5× faster.")


if __name__ == "__main__":
    main()
