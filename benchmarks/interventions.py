"""The Inside page's sweeps — every head knocked out alone, the residual stream patched at every layer × position —
against the named reference: one forward pass per variant with plain PyTorch forward hooks (what a notebook would
write), on the same model and text, in the same process; the results are asserted equal (≤ 1e-5).

    python benchmarks/interventions.py [--tokens 24] [--rounds 3] [--gpt2] [--quick]

The two sides run each sweep in alternating rounds (one sweep each a round, the side that goes first alternating:
``benchmarks/_rounds.py``), so that a change in the load falls on both: the seconds are each side's median round, the
speed-up the median per-round ratio (its spread is printed under the table, beside the load average). ``--quick``
(the shipped GPT only, 8 tokens, 5 rounds) is the tests' smoke run.

llmviz stacks the variants as the rows of a few batched forward passes (llmviz.interpret.interventions). The work
column is :func:`llmviz.interpret.interventions.forward_work` × runs, the number the page compares with IN_PAGE_WORK
to decide between the page and a lab job. ``--gpt2`` adds GPT-2 small's shapes (random weights, 124M parameters).
"""

import argparse
import contextlib
import os
import platform
import statistics
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from _rounds import Rounds, alternate, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.interpret import ablation, interventions, patching  # noqa: E402
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS  # noqa: E402
from llmviz.training.checkpoint import load_checkpoint  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data"


@contextlib.contextmanager
def hooks(handles):
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def reference_head_losses(model: GPT, ids: torch.Tensor) -> torch.Tensor:
    """One forward pass per head, its columns of W_O's input set to 0 by a forward pre-hook."""
    size = model.config.head_dim
    grid = torch.zeros(model.config.n_layers, model.config.n_heads)
    for layer, block in enumerate(model.blocks):
        for head in range(model.config.n_heads):

            def zero(module, args, head=head):
                x = args[0].clone()
                x[..., head * size : (head + 1) * size] = 0.0
                return (x,)

            with hooks([block.attn.proj.register_forward_pre_hook(zero)]):
                logits, _ = model(ids)
            grid[layer, head] = F.cross_entropy(logits[0, :-1], ids[0, 1:])
    return grid


@torch.no_grad()
def reference_patching(model: GPT, clean: torch.Tensor, corrupted: torch.Tensor, answer: int, wrong: int):
    """One forward pass per layer × position: the clean block input put in with a forward pre-hook."""
    seen = {}
    keep = [
        block.register_forward_pre_hook(lambda m, args, layer=layer: seen.__setitem__(layer, args[0].clone()))
        for layer, block in enumerate(model.blocks)
    ]
    with hooks(keep):
        model(clean)
    grid = torch.zeros(model.config.n_layers, clean.shape[1])
    for layer, block in enumerate(model.blocks):
        for position in range(clean.shape[1]):

            def put(module, args, layer=layer, position=position):
                x = args[0].clone()
                x[:, position] = seen[layer][:, position]
                return (x, *args[1:])

            with hooks([block.register_forward_pre_hook(put)]):
                logits, _ = model(corrupted)
            grid[layer, position] = logits[0, -1, answer] - logits[0, -1, wrong]
    return grid


def in_rounds(reference, ours, rounds: int) -> tuple[Rounds, object, object]:
    """The two sweeps in alternating rounds (after one run of each, not compared: the first pass allocates): their
    timings and each side's last result."""
    results: dict[str, object] = {}
    reference(), ours()

    def keep(name, function):
        return lambda: results.__setitem__(name, function())

    found = alternate({"ref.": keep("ref.", reference), "llmviz": keep("llmviz", ours)}, rounds)
    return found, results["ref."], results["llmviz"]


def row(name: str, sweep: str, runs: int, work: float, found: Rounds, fits: bool) -> str:
    slow, fast = (statistics.median(found.seconds[side]) for side in ("ref.", "llmviz"))
    speed = found.median("ref.", "llmviz")
    return f"{name:<28} | {sweep:<22} | {runs:>5} | {work:8.1e} | {slow:9.3f} | {fast:8.3f} | {speed:7.2f}× | {fits}"


def models(with_gpt2: bool) -> list[tuple[str, GPT]]:
    shipped, _, _ = load_checkpoint(DATA / "gpt-python-docs")
    found = [("shipped GPT", shipped.eval())]
    torch.manual_seed(0)
    found.append(("llama-style (random)", GPT(PRESETS["llama-style"]).eval()))
    if with_gpt2:
        found.append(("GPT-2 small shapes (random)", GPT(PRESETS["gpt2-124m"].replace(dropout=0.0)).eval()))
    return found


def rows(name: str, model: GPT, tokens: int, rounds: int) -> tuple[list[str], list[str]]:
    """The two sweeps on ``model``: the reference and llmviz in rounds, their results asserted equal; the table's
    lines and each sweep's per-round spread."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (1, tokens), generator=generator)
    corrupted = ids.clone()
    corrupted[0, 2] = (ids[0, 2] + 1) % model.config.vocab_size
    lines, spreads = [], []
    runs = model.config.n_layers * model.config.n_heads
    found, expected, effects = in_rounds(
        lambda: reference_head_losses(model, ids), lambda: ablation.head_effects(model, ids[0].tolist()), rounds
    )
    torch.testing.assert_close(effects.losses, expected, atol=1e-5, rtol=0)
    work = runs * interventions.forward_work(model.config, tokens)
    fits = interventions.fits_in_page(model.config, tokens, runs + 1)
    lines.append(row(name, "every head knocked out", runs, work, found, fits))
    spreads.append(f"{name}, every head knocked out: {found.summary('ref.', 'llmviz')}")
    answer, wrong = patching.default_answers(model, ids[0].tolist(), corrupted[0].tolist())
    cells = model.config.n_layers * tokens
    found, expected, result = in_rounds(
        lambda: reference_patching(model, ids, corrupted, answer, wrong),
        lambda: patching.patching(model, ids[0].tolist(), corrupted[0].tolist(), answer, wrong, "resid_pre"),
        rounds,
    )
    torch.testing.assert_close(result.differences, expected, atol=1e-5, rtol=0)
    work = cells * interventions.forward_work(model.config, tokens)
    fits = interventions.fits_in_page(model.config, tokens, cells)
    lines.append(row(name, "residual patched", cells, work, found, fits))
    spreads.append(f"{name}, residual patched: {found.summary('ref.', 'llmviz')}")
    return lines, spreads


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of one sweep by each side")
    parser.add_argument("--gpt2", action="store_true", help="add GPT-2 small's shapes (slow)")
    parser.add_argument("--quick", action="store_true", help="the shipped GPT only, 8 tokens, 5 rounds: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.rounds, args.gpt2 = 8, 5, False
    print(
        f"{date.today()} · {platform.processor() or platform.machine()} · {os.cpu_count()} cores · torch "
        f"{torch.__version__}, {torch.get_num_threads()} threads · load average {load_average()} · "
        f"{args.tokens} tokens · {args.rounds} rounds\n"
    )
    print(
        f"{'model':<28} | {'sweep':<22} | {'runs':>5} | {'work':>8} | {'ref. (s)':>9} | {'llmviz':>8} | "
        f"{'speed-up':>8} | in page"
    )
    print("-" * 115)
    spreads = []
    for name, model in models(args.gpt2)[: 1 if args.quick else None]:
        lines, found = rows(name, model, args.tokens, args.rounds)
        spreads += found
        for line in lines:
            print(line, flush=True)
    print(
        "\nref.: one forward pass per variant with plain PyTorch forward hooks; llmviz (s): the variants as rows of "
        "batched passes (patching skips the positions before the changed token, which restore nothing); the seconds "
        "are each side's median round, the speed-up the median per-round ratio (ref.'s seconds over llmviz's). A "
        f"sweep runs in the page up to {interventions.IN_PAGE_WORK:.0e} multiply-adds, else as a lab job.\n"
    )
    print("speed-up per round (ref.'s seconds over llmviz's):")
    for line in spreads:
        print(f"  {line}")
    print(f"load average: {load_average()} after")


if __name__ == "__main__":
    main()
