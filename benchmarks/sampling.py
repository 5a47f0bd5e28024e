"""Generating 200 tokens with the shipped GPT, with and without the KV cache (identical tokens asserted).

    python benchmarks/sampling.py [--tokens 200]

With the cache, each new token runs the model on one position and reuses every earlier key
and value; without it, each token re-runs the whole window. When the text outgrows the
model's context (128 positions), both paths shift the window to its last half (the same rule,
so the same tokens); the cache is rebuilt once there and reused again. The two paths generate in rounds (one
generation each, the path that goes first alternating: ``benchmarks/_rounds.py``); the seconds are each path's median
round and the speed-up the median per-round ratio, beside the load average.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from _rounds import Rounds, load_average, spread_text  # noqa: E402 - this folder is on sys.path

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
    parser.add_argument("--rounds", type=int, default=5, help="rounds of one generation by each path")
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
    ratios: list[float] = []
    for tokens in (args.tokens, inside):
        for temperature in (0.0, 0.8):
            run(model, ids, 10, True, temperature)
            rounds, outputs = Rounds(), {}
            for index in range(args.rounds):  # rounds of one generation each, the side that goes first alternating
                for cache in (False, True) if index % 2 == 0 else (True, False):
                    seconds, outputs[cache] = run(model, ids, tokens, cache, temperature)
                    rounds.add(str(cache), seconds)
            a, b = outputs[False], outputs[True]
            assert a == b, "the KV cache changed the generated tokens"
            label = "greedy" if temperature == 0 else f"T={temperature}"
            slow, fast = (statistics.median(rounds.seconds[side]) for side in ("False", "True"))
            ratios.append(rounds.median("False", "True"))
            print(f"{tokens:>6} | {label:<8} | {slow:12.3f} | {fast:12.3f} | {ratios[-1]:7.2f}× | {a == b}")
    print(f"\n{inside} tokens fit the context after the prompt; past that, both paths shift the window by half.")
    print(f"\nspeed-ups (each the median per-round ratio): {spread_text(ratios)}; load average {load_average()}")
    print("\nTarget: the cache at least 1.5× faster.")


if __name__ == "__main__":
    main()
