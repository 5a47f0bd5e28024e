"""Sentence embeddings per second: llmviz's MiniLM vs sentence-transformers' encode, same sentences, CPU.

python benchmarks/pretrained.py [--sentences 512] [--batch 64] [--rounds 5]

The two encode the same sentences in rounds (each encodes them all once a round, the side that goes first alternating:
``benchmarks/_rounds.py``); seconds are each side's median round, the speed the median per-round ratio with its spread.
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from _rounds import alternate, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.data import corpus  # noqa: E402
from llmviz.models.minilm import MiniLM, model_folder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of one encoding of every sentence by each side")
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    lines = [line.strip() for line in corpus.load("python-docs").splitlines() if len(line.strip()) > 20]
    sentences = lines[: args.sentences]
    ours = MiniLM()
    reference = SentenceTransformer(str(model_folder()), device="cpu")
    ours.encode(sentences[:32])
    reference.encode(sentences[:32], batch_size=args.batch)
    rounds = alternate(
        {
            "llmviz": lambda: ours.encode(sentences, batch_size=args.batch),
            "reference": lambda: reference.encode(sentences, batch_size=args.batch, convert_to_numpy=True),
        },
        args.rounds,
    )
    ours_time, reference_time = (statistics.median(rounds.seconds[side]) for side in ("llmviz", "reference"))
    difference = (ours.encode(sentences[:64]) - torch.as_tensor(reference.encode(sentences[:64]))).abs().max()
    print(f"{len(sentences)} python-docs lines, batch {args.batch}, CPU, {torch.get_num_threads()} threads\n")
    print(f"{'encoder':<34} | {'seconds':>8} | {'sentences/s':>11}")
    print("-" * 60)
    print(f"{'llmviz MiniLM':<34} | {ours_time:8.3f} | {len(sentences) / ours_time:11.1f}")
    print(f"{'sentence-transformers encode':<34} | {reference_time:8.3f} | {len(sentences) / reference_time:11.1f}")
    print(
        f"\nllmviz / reference speed, per round: {rounds.summary('reference', 'llmviz')} (target ≥ 0.8× by the "
        f"median); largest embedding difference {float(difference):.1e}\nload average: {load_average()}"
    )


if __name__ == "__main__":
    main()
