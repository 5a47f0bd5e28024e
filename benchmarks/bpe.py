"""BPE training speed: llmviz's trainer vs Hugging Face `tokenizers` (one thread), same input.

    python benchmarks/bpe.py [--naive] [--rounds 3] [--quick]

Rows: python-docs (GPT-4 split pattern) at vocabularies 1024, 4096 and 16384, and a
10 MB "upload" (the Python standard library's own .py files, read in sorted order until
10 MB, so every machine with the same Python builds the same text) at 4096. Hugging Face's
trainer runs with RAYON_NUM_THREADS=1 and its byte-level pre-tokenizer; both times include
pre-splitting and counting. Encoding: llmviz's pure-Python encoder vs the same merges
exported to tiktoken. --naive adds the textbook recount-every-merge loop
(`llmviz.tokenizers.bpe.merging.train_naive`) at vocab 1024 (slow).

Each row's two trainers (and the two encoders) run in alternating rounds (one training each a round, the side that
goes first alternating: ``benchmarks/_rounds.py``), so that a change in the load falls on both: the seconds are each
side's median round, the ratio the median per-round ratio, with its spread under the table beside the load average.
``--quick`` (python-docs at vocab 1024 and 100,000 characters with no split, 3 rounds, 200,000 characters encoded) is
the tests' smoke run.

Target (issue #20): llmviz / HF ≤ 3× on every row.
"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import sysconfig
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # Hugging Face tokenizers on one thread
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _rounds import Rounds, alternate, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.data import corpus  # noqa: E402
from llmviz.tokenizers.bpe.merging import train_naive  # noqa: E402
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer  # noqa: E402

UPLOAD_BYTES = 10_000_000


def hf_train(text: str, vocab_size: int, split: bool = True) -> int:
    """Train Hugging Face's BPE on ``text``; its vocabulary size."""
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
    tokenizer.train_from_iterator([text], trainer=trainer)
    return tokenizer.get_vocab_size()


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
    return (
        f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}; load average {load_average()} at start"
    )


def train_row(text: str, vocab_size: int, pattern: str | None, rounds: int) -> tuple[Rounds, BPETokenizer, int]:
    """Both trainers on ``text`` in alternating rounds: the timings, llmviz's tokenizer and HF's vocabulary size."""
    found: dict[str, object] = {}

    def ours() -> None:
        found["bpe"] = BPETokenizer.train(text, vocab_size, split_pattern=pattern)

    def theirs() -> None:
        found["hf"] = hf_train(text, vocab_size, split=pattern is not None)

    timings = alternate({"llmviz": ours, "HF": theirs}, rounds)
    return timings, found["bpe"], found["hf"]  # type: ignore[return-value]


def encode_rates(bpe: BPETokenizer, sample: str, rounds: int) -> tuple[str, str, Rounds]:
    """MB/s of the pure-Python encoder and of the tiktoken export on ``sample`` (the same ids asserted), in
    alternating rounds: each side's median round."""
    encoding = bpe.to_tiktoken()
    ids = bpe.encode(sample)
    assert encoding.encode_ordinary(sample) == ids
    timings = alternate(
        {"python": lambda: bpe.encode(sample), "tiktoken": lambda: encoding.encode_ordinary(sample)}, rounds
    )
    megabytes = len(sample.encode()) / 1e6
    python, fast = (megabytes / statistics.median(timings.seconds[side]) for side in ("python", "tiktoken"))
    return f"{python:.2f}", f"{fast:.2f}", timings


def cases(quick: bool) -> list[tuple[str, str, int, str | None]]:
    docs = corpus.load("python-docs")
    if quick:
        return [("python-docs", docs, 1024, "gpt4"), ("no split", docs[:100_000], 1024, None)]
    upload = upload_text()
    return [
        ("python-docs", docs, 1024, "gpt4"),
        ("python-docs", docs, 4096, "gpt4"),
        ("python-docs", docs, 16384, "gpt4"),
        ("10 MB upload", upload, 4096, "gpt4"),
        ("no split", docs[:200_000], 1024, None),
    ]


def naive(docs: str, rounds: int) -> None:
    found: dict[str, object] = {}
    timings = alternate(
        {
            "naive": lambda: found.__setitem__("naive", train_naive(docs, 1024 - 1)),
            "incremental": lambda: found.__setitem__("fast", BPETokenizer.train(docs, 1024, special_tokens=())),
        },
        rounds,
    )
    fast, slow = found["fast"], found["naive"]
    assert list(fast.merges[: len(slow)]) == slow  # type: ignore[attr-defined, arg-type]
    print(
        f"naive loop at vocab 1024 on python-docs: {statistics.median(timings.seconds['naive']):.2f} s; its time over "
        f"the incremental trainer's, per round: {timings.summary('naive', 'incremental')} (same merges)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--naive", action="store_true", help="also time the textbook loop at vocab 1024")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of one training by each side")
    parser.add_argument("--quick", action="store_true", help="two small rows, 3 rounds: a smoke run")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {args.rounds} rounds\n")
    rows = cases(args.quick)
    docs, upload = rows[0][1], rows[-2][1]
    print(
        f"python-docs: {len(docs):,} characters ({len(docs.encode()) / 1e6:.2f} MB); "
        f"{'' if args.quick else f'10 MB upload: {len(upload):,} characters of Python standard-library source; '}"
        f"GPT-4 split pattern, except 'no split': python-docs' first {len(rows[-1][1]):,} characters as one sequence "
        "(no pre-split, both trainers)\n"
    )
    print(
        f"{'text':>12} | {'vocab':>6} | {'llmviz train':>12} | {'HF tokenizers':>13} | {'llmviz/HF':>9} | "
        f"{'merges llmviz/HF':>16} | {'encode py MB/s':>14} | {'encode tiktoken MB/s':>20}"
    )
    print("-" * 125)
    worst, spreads = 0.0, []
    for name, text, vocab_size, pattern in rows:
        timings, bpe, hf_vocab = train_row(text, vocab_size, pattern, args.rounds)
        python_rate = tiktoken_rate = "-"  # one short chunk with no split: encoding it is not what this row measures
        if pattern is not None:
            sample = text[: 200_000 if args.quick else 2_000_000]
            python_rate, tiktoken_rate, encoded = encode_rates(bpe, sample, args.rounds)
            spreads.append(
                f"{name} {vocab_size}, tiktoken / pure-Python encoding speed: {encoded.summary('python', 'tiktoken')}"
            )
        ratio = timings.median("llmviz", "HF")
        worst = max(worst, ratio)
        spreads.append(f"{name} {vocab_size}, llmviz's training time over HF's: {timings.summary('llmviz', 'HF')}")
        ours, hf = (statistics.median(timings.seconds[side]) for side in ("llmviz", "HF"))
        merges = f"{len(bpe.merges):,}/{hf_vocab - 257:,}"
        print(
            f"{name:>12} | {vocab_size:>6} | {ours:10.2f} s | {hf:11.2f} s | {ratio:8.2f}× | {merges:>16} | "
            f"{python_rate:>14} | {tiktoken_rate:>20}",
            flush=True,
        )
    print(
        f"\nWorst row's llmviz / HF: {worst:.2f}× (target ≤ 3×), each row's the median per-round ratio; the seconds "
        "are each side's median round. 'merges' counts the merges each trainer learned: a text can run out of pairs "
        "before the vocabulary is full.\n\nPer round:"
    )
    for line in spreads:
        print(f"  {line}")
    print(f"load average: {load_average()} after")
    if args.naive:
        naive(docs, min(args.rounds, 2))


if __name__ == "__main__":
    main()
