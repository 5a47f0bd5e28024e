"""Server time of each page on GPT-2 (124M) next to the shipped GPT, same sentence (≤ 32 tokens).

    python benchmarks/gpt2_pages.py [--repeats 3] [--pages attention,model] [--compute-only] [--quick]

GPT-2's weights are not needed: a *randomly initialised* GPT-2-124M-shaped model (12 layers,
12 heads, d_model 768, 50,257 tokens, context 1024 — the same shapes, so the same compute and
memory as OpenAI's weights) is written in Hugging Face's format into a temporary
huggingface_hub cache under the id ``gpt2``, exactly where the app looks for the real one.
The pages then run headless (Streamlit's AppTest, through app.py) with the picker on
``hub:gpt2``; the reference is the same page on the shipped GPT.

Two tables:
1. compute: the llmviz calls behind the pages (recorded forward pass, next-token
   distribution, nearest neighbours in the embedding table) on GPT-2 vs the shipped GPT;
2. pages: first render (loads the model, once per server) and a rerun after typing a new
   ≤ 32-token sentence, for every page that follows the picker.
The two sides (GPT-2 and the shipped GPT) run each call, and rerun each page, in alternating rounds (``--repeats``
rounds, the side that goes first alternating: ``benchmarks/_rounds.py``), so that a change in the load falls on both;
each side's median round is shown with GPT-2's time over the shipped GPT's as the median per-round ratio, its spread
under the table beside the load average. ``--quick`` (``--compute-only``, 3 rounds) is the tests' smoke run.
The target (issue 17): a rerun with a ≤ 32-token sentence in ≤ 1 s of server time.
Timings on a shared, busy CPU are inflated: say so when quoting them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CACHE = Path(tempfile.mkdtemp(prefix="llmviz-gpt2-bench-"))
os.environ["HF_HUB_CACHE"] = str(CACHE)  # before huggingface_hub is imported
os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402
from _rounds import Rounds, alternate, load_average  # noqa: E402 - this folder is on sys.path

SENTENCE = "Every effort moves you forward, and the cat sat on the mat because it was tired."
NEW_SENTENCE = "The quick brown fox jumps over the lazy dog while the students watch the screen."


def place_random_gpt2(repo_id: str = "gpt2") -> Path:
    """A random GPT-2-124M-shaped model, saved as a cached Hub download of ``repo_id``."""
    from llmviz.hub import gpt2
    from llmviz.models.gpt import GPT

    torch.manual_seed(0)
    model = GPT(gpt2.config_from_hf({}))  # GPT2Config's defaults: the 124M shapes
    repo = CACHE / ("models--" + repo_id)
    commit = hashlib.sha1(b"random-gpt2-124m").hexdigest()
    gpt2.save_hf_folder(model, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    assert gpt2.FILES.is_cached(repo_id)
    return repo / "snapshots" / commit


def in_rounds(sides: dict[str, Callable[[], object]], rounds: int) -> tuple[Rounds, Rounds]:
    """Each side's wall-clock and CPU seconds in the same alternating rounds (the side that goes first alternating,
    after one run of each, not compared): on a busy machine the CPU time is the steadier one."""
    for side in sides.values():
        side()
    wall, cpu = Rounds(), Rounds()
    order = list(sides)
    for index in range(rounds):
        for name in order if index % 2 == 0 else order[::-1]:
            start, used = time.perf_counter(), time.process_time()
            sides[name]()
            wall.add(name, time.perf_counter() - start)
            cpu.add(name, time.process_time() - used)
    return wall, cpu


def compute_table(repeats: int) -> tuple[list[list[str]], list[str]]:
    """The llmviz calls behind the pages on GPT-2 and on the shipped GPT, in alternating rounds: the rows and each
    call's per-round spread."""
    from llmviz.generation.sampling import next_token_view
    from llmviz.hub import gpt2
    from llmviz.lessons.embeddings import nearest_neighbours
    from llmviz.training.checkpoint import load_checkpoint

    shipped, shipped_tok, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    start = time.perf_counter()
    model, tokenizer, _ = gpt2.load("gpt2")
    load_s = time.perf_counter() - start
    rows = [["load GPT-2 124M from the cache (once per server)", "-", f"{load_s:.2f} s", "-", "-", "-"]]
    spreads = []
    for what, call in [
        (
            "run_with_cache, ≤ 32 tokens (Attention, Model)",
            lambda m, t: m.run_with_cache(torch.tensor([t.encode(SENTENCE)[:32]])),
        ),
        (
            "next_token_view, 'Every effort moves you' (Sampling)",
            lambda m, t: next_token_view(m, t, "Every effort moves you", 1.0, 10, 1.0),
        ),
        (
            "nearest neighbours of a token in the whole table (Embeddings)",
            lambda m, t: nearest_neighbours(
                m.tok_emb.weight.detach(), m.tok_emb.weight[t.encode(" effort")[0]].detach(), 10
            ),
        ),
    ]:
        sides = {
            "shipped": lambda call=call: call(shipped, shipped_tok),
            "GPT-2": lambda call=call: call(model, tokenizer),
        }
        try:
            wall, cpu = in_rounds(sides, repeats)
        except (TypeError, ImportError, AttributeError) as error:  # an llmviz signature changed
            rows.append([what, "n/a", f"({type(error).__name__})", "", "", ""])
            continue
        reference, ours = (statistics.median(wall.seconds[side]) * 1000 for side in ("shipped", "GPT-2"))
        ours_cpu = statistics.median(cpu.seconds["GPT-2"]) * 1000
        ratio, ratio_cpu = wall.median("GPT-2", "shipped"), cpu.median("GPT-2", "shipped")
        rows.append(
            [what, f"{reference:.0f} ms", f"{ours:.0f} ms", f"{ours_cpu:.0f} ms", f"{ratio:.2f}×", f"{ratio_cpu:.2f}×"]
        )
        spreads.append(f"{what}: wall {wall.summary('GPT-2', 'shipped')}; CPU {cpu.summary('GPT-2', 'shipped')}")
    return rows, spreads


def open_page(entry: str, path: str, key: str):
    """An AppTest session on the page with the picker on ``key``: it, the first render's seconds and its errors."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(entry, default_timeout=600)
    at.session_state["_picker_selected"] = key
    at.run()
    start = time.perf_counter()
    at.switch_page(path).run()
    return at, time.perf_counter() - start, len(at.exception) + len(at.error)


def rerunner(at, errors: list[int]) -> Callable[[], None]:
    """A rerun of ``at`` after typing a new sentence (the two sentences in turn), its errors added to ``errors``."""
    inputs = [w for w in at.text_input if w.value and len(w.value) > 8] + [
        w for w in at.text_area if w.value and len(w.value) > 8
    ]
    count = iter(range(10**9))

    def rerun() -> None:
        if inputs:
            inputs[0].set_value(NEW_SENTENCE if next(count) % 2 == 0 else SENTENCE)
        at.run()
        errors[0] += len(at.exception) + len(at.error)

    return rerun


def page_table(pages: list[str], repeats: int) -> tuple[list[list[str]], list[str]]:
    """Each page's first render on the shipped GPT and on GPT-2, then reruns of the two in alternating rounds."""
    entry = str(ROOT / "app.py")
    rows, spreads = [], []
    for page in pages:
        path = str(ROOT / "stages" / f"{page}.py")
        if not Path(path).exists():
            continue
        firsts, reruns, errors = {}, {}, {}
        for side, key in (("shipped", "shipped:gpt-python-docs"), ("GPT-2", "hub:gpt2")):
            at, firsts[side], opened = open_page(entry, path, key)
            errors[side] = [opened]
            reruns[side] = rerunner(at, errors[side])
        timed = alternate(reruns, repeats)
        cells = [page]
        for side in ("shipped", "GPT-2"):
            times = timed.seconds[side]
            cells += [
                f"{firsts[side]:.2f} s",
                f"{min(times):.2f} s / {statistics.median(times):.2f} s",
                str(errors[side][0]),
            ]
        rows.append([*cells, f"{timed.median('GPT-2', 'shipped'):.2f}×"])
        spreads.append(f"{page}: {timed.summary('GPT-2', 'shipped')}")
    return rows, spreads


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) if i < len(r) else 0 for r in [header, *rows]) for i in range(len(header))]
    for line in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", default="tokens,embeddings,attention,model,inside,sampling")
    parser.add_argument("--compute-only", action="store_true")
    parser.add_argument("--quick", action="store_true", help="--compute-only with 3 rounds: a smoke run")
    parser.add_argument(
        "--browser",
        action="store_true",
        help="also run benchmarks/pages.py (real browser, fragments) with --model hub:gpt2 on this cache",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (the app's job manager sets 1 per op on a 2-core server)"
    )
    args = parser.parse_args()
    if args.quick:
        args.compute_only, args.repeats = True, 3
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU; random GPT-2-124M-shaped weights "
        f"in a temporary cache ({CACHE})"
    )
    place_random_gpt2()
    print(f"\nllmviz calls behind the pages ({args.repeats} rounds, each side's median round)\n")
    rows, spreads = compute_table(args.repeats)
    print_table(
        ["call", "shipped GPT (wall)", "GPT-2 124M shape (wall)", "(CPU time)", "GPT-2 / shipped", "(CPU)"], rows
    )
    print("\nGPT-2's time over the shipped GPT's, per round:")
    for line in spreads:
        print(f"  {line}")
    print(f"load average: {load_average()}")
    if args.compute_only:
        return
    if args.browser and (ROOT / "benchmarks" / "pages.py").exists():
        import subprocess

        print("\nbenchmarks/pages.py --model hub:gpt2 (the same random GPT-2-124M-shaped weights)\n", flush=True)
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "pages.py"),
                "--model",
                "hub:gpt2",
                "--pages",
                args.pages,
                "--repeats",
                str(args.repeats),
            ],
            env={
                **os.environ,
                "HF_HUB_CACHE": str(CACHE),
                "HF_HUB_OFFLINE": "1",
                "LLMVIZ_TORCH_THREADS": str(args.threads),
            },
            check=False,
        )
        return
    print("\npages, through app.py (AppTest): first render, then reruns after typing a new sentence, in rounds\n")
    rows, spreads = page_table(args.pages.split(","), args.repeats)
    print_table(
        [
            "page",
            "shipped: first",
            "shipped: rerun best / median",
            "errors",
            "GPT-2: first",
            "GPT-2: rerun best / median",
            "errors",
            "GPT-2 / shipped rerun",
        ],
        rows,
    )
    print("\nGPT-2's rerun time over the shipped GPT's, per round:")
    for line in spreads:
        print(f"  {line}")
    print(f"load average: {load_average()}")


if __name__ == "__main__":
    main()
