"""BPE training and encoding speed on python-docs.

Training: llmviz's incremental trainer vs the naive recount-every-merge loop (same merges,
`llmviz.tokenizers.train_naive`) vs Hugging Face `tokenizers`' BPE trainer on one thread.
Encoding: llmviz's pure-Python encoder vs the same merges exported to tiktoken.

    python benchmarks/bpe.py [--naive-limit 1024]

The naive trainer is run in full up to --naive-limit; above it, its time is the measured
time of its first 200 merges scaled to the full count (marked "est.").
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # Hugging Face tokenizers on one thread
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmviz import corpus  # noqa: E402
from llmviz.tokenizers import BPETokenizer, train_naive  # noqa: E402


def hf_train_seconds(text: str, vocab_size: int) -> float:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    start = time.perf_counter()
    tokenizer.train_from_iterator([text], trainer=trainer)
    return time.perf_counter() - start


def naive_seconds(text: str, vocab_size: int, limit: int) -> tuple[float, bool]:
    merges = vocab_size - 257
    if vocab_size <= limit:
        start = time.perf_counter()
        train_naive(text, vocab_size - 1)
        return time.perf_counter() - start, False
    sample = 200
    start = time.perf_counter()
    train_naive(text, 256 + sample)
    return (time.perf_counter() - start) * merges / sample, True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--naive-limit", type=int, default=1024)
    args = parser.parse_args()
    text = corpus.load("python-docs")
    megabytes = len(text.encode()) / 1e6
    print(f"python-docs: {len(text):,} characters ({megabytes:.2f} MB); GPT-4 split pattern\n")
    print(f"{'vocab':>6} | {'llmviz train':>12} | {'naive train':>14} | {'speed-up':>8} | {'HF tokenizers':>13} | "
          f"{'llmviz/HF':>9} | {'encode py MB/s':>14} | {'encode tiktoken MB/s':>20}")
    print("-" * 120)
    for vocab_size in (512, 1024, 4096):
        start = time.perf_counter()
        bpe = BPETokenizer.train(text, vocab_size)
        ours = time.perf_counter() - start
        naive, estimated = naive_seconds(text, vocab_size, args.naive_limit)
        hf = hf_train_seconds(text, vocab_size)
        start = time.perf_counter()
        ids = bpe.encode(text)
        python_rate = megabytes / (time.perf_counter() - start)
        encoding = bpe.to_tiktoken()
        start = time.perf_counter()
        assert encoding.encode(text, allowed_special="all") == ids
        tiktoken_rate = megabytes / (time.perf_counter() - start)
        naive_text = f"{naive:9.2f} s{' est.' if estimated else '     '}"
        print(f"{vocab_size:>6} | {ours:10.2f} s | {naive_text:>14} | {naive / ours:7.0f}× | {hf:11.2f} s | "
              f"{ours / hf:8.1f}× | {python_rate:14.2f} | {tiktoken_rate:20.2f}")
    print("\nTargets at vocab 1024: ≥ 50× faster than naive; within 5× of Hugging Face's trainer (one thread).")


if __name__ == "__main__":
    main()
