"""The Inside page's sweeps — every head knocked out alone, the residual stream patched at every layer × position —
against the named reference: one forward pass per variant with plain PyTorch forward hooks (what a notebook would
write), on the same model and text, in the same process; the results are asserted equal (≤ 1e-5).

    python benchmarks/interventions.py [--tokens 24] [--gpt2]

llmviz stacks the variants as the rows of a few batched forward passes (llmviz.interpret.interventions). The work
column is :func:`llmviz.interpret.interventions.forward_work` × runs, the number the page compares with IN_PAGE_WORK
to decide between the page and a lab job. ``--gpt2`` adds GPT-2 small's shapes (random weights, 124M parameters).
"""

import argparse
import contextlib
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from llmviz.interpret import ablation, interventions, patching  # noqa: E402
from llmviz.models.gpt import GPT, PRESETS  # noqa: E402
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


def best_of(function, repeats: int = 3) -> tuple[float, object]:
    results = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        results.append((time.perf_counter() - start, value))
    return min(results, key=lambda pair: pair[0])


def models(with_gpt2: bool) -> list[tuple[str, GPT]]:
    shipped, _, _ = load_checkpoint(DATA / "gpt-python-docs")
    found = [("shipped GPT", shipped.eval())]
    torch.manual_seed(0)
    found.append(("llama-style (random)", GPT(PRESETS["llama-style"]).eval()))
    if with_gpt2:
        found.append(("GPT-2 small shapes (random)", GPT(PRESETS["gpt2-124m"].replace(dropout=0.0)).eval()))
    return found


def rows(name: str, model: GPT, tokens: int) -> list[str]:
    """The two sweeps on ``model``: the reference and llmviz timed, their results asserted equal."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (1, tokens), generator=generator)
    corrupted = ids.clone()
    corrupted[0, 2] = (ids[0, 2] + 1) % model.config.vocab_size
    lines = []
    runs = model.config.n_layers * model.config.n_heads
    slow, expected = best_of(lambda: reference_head_losses(model, ids))
    fast, found = best_of(lambda: ablation.head_effects(model, ids[0].tolist()))
    torch.testing.assert_close(found.losses, expected, atol=1e-5, rtol=0)
    work = runs * interventions.forward_work(model.config, tokens)
    fits = interventions.fits_in_page(model.config, tokens, runs + 1)
    lines.append(
        f"{name:<28} | {'every head knocked out':<22} | {runs:>5} | {work:8.1e} | {slow:9.3f} | {fast:8.3f} | {fits}"
    )
    answer, wrong = patching.default_answers(model, ids[0].tolist(), corrupted[0].tolist())
    cells = model.config.n_layers * tokens
    slow, expected = best_of(lambda: reference_patching(model, ids, corrupted, answer, wrong))
    fast, result = best_of(
        lambda: patching.patching(model, ids[0].tolist(), corrupted[0].tolist(), answer, wrong, "resid_pre")
    )
    torch.testing.assert_close(result.differences, expected, atol=1e-5, rtol=0)
    work = cells * interventions.forward_work(model.config, tokens)
    fits = interventions.fits_in_page(model.config, tokens, cells)
    lines.append(
        f"{name:<28} | {'residual patched':<22} | {cells:>5} | {work:8.1e} | {slow:9.3f} | {fast:8.3f} | {fits}"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--gpt2", action="store_true", help="add GPT-2 small's shapes (slow)")
    args = parser.parse_args()
    print(
        f"{date.today()} · {platform.processor() or platform.machine()} · {os.cpu_count()} cores · torch "
        f"{torch.__version__}, {torch.get_num_threads()} threads · load average {os.getloadavg()[0]:.1f} · "
        f"{args.tokens} tokens\n"
    )
    print(f"{'model':<28} | {'sweep':<22} | {'runs':>5} | {'work':>8} | {'ref. (s)':>9} | {'llmviz':>8} | in page")
    print("-" * 104)
    for name, model in models(args.gpt2):
        for line in rows(name, model, args.tokens):
            print(line, flush=True)
    print(
        "\nref.: one forward pass per variant with plain PyTorch forward hooks; llmviz (s): the variants as rows of "
        "batched passes (patching skips the positions before the changed token, which restore nothing). A sweep "
        f"runs in the page up to {interventions.IN_PAGE_WORK:.0e} multiply-adds, else as a lab job."
    )


if __name__ == "__main__":
    main()
