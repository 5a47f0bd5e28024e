"""BPE training speed: llmviz's trainer vs Hugging Face `tokenizers` (one thread), same input.

    python benchmarks/bpe.py [--naive]

Rows: python-docs (GPT-4 split pattern) at vocabularies 1024, 4096 and 16384, and a
10 MB "upload" (the Python standard library's own .py files, read in sorted order until
10 MB, so every machine with the same Python builds the same text) at 4096. Hugging Face's
trainer runs with RAYON_NUM_THREADS=1 and its byte-level pre-tokenizer; both times include
pre-splitting and counting. Encoding: llmviz's pure-Python encoder vs the same merges
exported to tiktoken. --naive adds the textbook recount-every-merge loop
(`llmviz.tokenizers.bpe.merging.train_naive`) at vocab 1024 (slow).

Target (issue #20): llmviz / HF ≤ 3× on every row.
"""

import argparse
import datetime
import os
import platform
import sys
import sysconfig
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # Hugging Face tokenizers on one thread
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmviz.data import corpus  # noqa: E402
from llmviz.tokenizers.bpe.merging import train_naive  # noqa: E402
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer

UPLOAD_BYTES = 10_000_000


def hf_train_seconds(text: str, vocab_size: int, split: bool = True) -> tuple[float, int]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    start = time.perf_counter()
    tokenizer.train_from_iterator([text], trainer=trainer)
    return time.perf_counter() - start, tokenizer.get_vocab_size()


def upload_text(size: int = UPLOAD_BYTES) -> str:
    """About ``size`` bytes of real text: the standard library's .py files in sorted order."""
    parts, total = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            part = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(part)
        total += len(part.encode())
        if total >= size:
            break
    return "".join(parts).encode()[:size].decode("utf-8", errors="ignore")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}; load average {load:.1f} at start"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--naive", action="store_true", help="also time the textbook loop at vocab 1024")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC\n")
    docs = corpus.load("python-docs")
    upload = upload_text()
    cases = [
        ("python-docs", docs, 1024, "gpt4"),
        ("python-docs", docs, 4096, "gpt4"),
        ("python-docs", docs, 16384, "gpt4"),
        ("10 MB upload", upload, 4096, "gpt4"),
        ("no split", docs[:200_000], 1024, None),
    ]
    print(
        f"python-docs: {len(docs):,} characters ({len(docs.encode()) / 1e6:.2f} MB); "
        f"10 MB upload: {len(upload):,} characters of Python standard-library source; GPT-4 split pattern, "
        "except 'no split': python-docs' first 200,000 characters as one sequence (no pre-split, both trainers)\n"
    )
    print(
        f"{'text':>12} | {'vocab':>6} | {'llmviz train':>12} | {'HF tokenizers':>13} | {'llmviz/HF':>9} | "
        f"{'merges llmviz/HF':>16} | {'encode py MB/s':>14} | {'encode tiktoken MB/s':>20}"
    )
    print("-" * 125)
    worst = 0.0
    for name, text, vocab_size, pattern in cases:
        start = time.perf_counter()
        bpe = BPETokenizer.train(text, vocab_size, split_pattern=pattern)
        ours = time.perf_counter() - start
        hf, hf_vocab = hf_train_seconds(text, vocab_size, split=pattern is not None)
        python_rate = tiktoken_rate = "-"  # one 200,000-byte chunk: encoding it is not what this row measures
        if pattern is not None:
            sample = text[:2_000_000]
            start = time.perf_counter()
            ids = bpe.encode(sample)
            python_rate = f"{len(sample.encode()) / 1e6 / (time.perf_counter() - start):.2f}"
            encoding = bpe.to_tiktoken()
            start = time.perf_counter()
            assert encoding.encode_ordinary(sample) == ids
            tiktoken_rate = f"{len(sample.encode()) / 1e6 / (time.perf_counter() - start):.2f}"
        worst = max(worst, ours / hf)
        merges = f"{len(bpe.merges):,}/{hf_vocab - 257:,}"
        print(
            f"{name:>12} | {vocab_size:>6} | {ours:10.2f} s | {hf:11.2f} s | {ours / hf:8.2f}× | {merges:>16} | "
            f"{python_rate:>14} | {tiktoken_rate:>20}"
        )
    print(
        f"\nWorst llmviz / HF: {worst:.1f}× (target ≤ 3×). 'merges' counts the merges each trainer learned: a text "
        "can run out of pairs before the vocabulary is full."
    )
    if args.naive:
        start = time.perf_counter()
        naive = train_naive(docs, 1024 - 1)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        fast = BPETokenizer.train(docs, 1024, special_tokens=())
        assert [m for m in fast.merges[: len(naive)]] == naive
        print(
            f"naive loop at vocab 1024 on python-docs: {seconds:.2f} s, "
            f"{seconds / (time.perf_counter() - start):.0f}× the incremental trainer (same merges)"
        )


if __name__ == "__main__":
    main()
