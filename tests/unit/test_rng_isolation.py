"""One server process serves every session: a run's or a view's randomness is its own (torch.Generator objects),
so another session's rerun, run or sampling never changes it; and every rank of a data-parallel job draws its own
dropout masks."""

import threading

import pytest
import torch

from llmviz.data import corpus
from llmviz.generation.sampling import generate
from llmviz.models.gpt import GPT, GPTConfig
from llmviz.models.layers import Dropout
from llmviz.training.config import TrainConfig
from llmviz.training.distributed import ProcessGroup
from llmviz.training.trainer import Trainer
from tests.support.paths import ROOT

NAMES = corpus.load("names")[:6000]


def config(seed: int) -> TrainConfig:
    return TrainConfig(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=6,
        lr=1e-2,
        warmup_steps=2,
        eval_interval=100,
        eval_batches=1,
        seed=seed,
        dropout=0.2,
    )


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in trainer.model.state_dict().items()}


def test_two_runs_interleaved_train_exactly_as_each_would_alone():
    alone = Trainer.from_text(NAMES, config(3))
    list(alone.run())
    expected = weights(alone)

    first = Trainer.from_text(NAMES, config(3))
    steps = first.run()
    next(steps)
    second = Trainer.from_text(NAMES, config(4))  # another student starts a run in the middle of this one
    other_steps = second.run()
    for _ in range(5):
        torch.manual_seed(1337)  # what every page rerun used to do (app.py seeded the global generator)
        next(other_steps)
        torch.rand(1000)  # and someone else draws from the global generator
        next(steps, None)
    for name, tensor in weights(first).items():
        assert torch.equal(tensor, expected[name]), name


def _sample(model, seed, barrier=None, out=None):
    generator = torch.Generator().manual_seed(seed)  # the view's own stream
    tokens = []
    for record in generate(model, [1, 2, 3], max_new_tokens=12, temperature=1.0, generator=generator):
        tokens.append(record.token)
        if barrier is not None:
            barrier.wait(timeout=20)  # lock-step: the two threads' draws interleave token by token
            torch.manual_seed(0)  # and each reseeds the global generator, as the old pages did on every rerun
    if out is not None:
        out[seed] = tokens
    return tokens


def test_two_threads_sampling_with_their_own_generators_get_what_they_get_alone():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=30, context_length=32, d_model=16, n_heads=2, n_layers=1)).eval()
    alone = {seed: _sample(model, seed) for seed in (5, 6)}
    barrier, out = threading.Barrier(2), {}
    threads = [threading.Thread(target=_sample, args=(model, seed, barrier, out)) for seed in (5, 6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert out == alone and alone[5] != alone[6]


class _Rank(ProcessGroup):
    """A rank of a two-process job, without a process group (no DDP wrapping): enough to build its Trainer."""

    def wrap(self, model):
        return model


def _first_mask(trainer: Trainer) -> torch.Tensor:
    layer = next(module for module in trainer.model.modules() if isinstance(module, Dropout))
    layer.train()
    return layer(torch.ones(4096)) == 0


def test_each_rank_draws_its_own_dropout_masks_and_a_rank_repeats_its_own():
    rank0, rank1 = (Trainer.from_text(NAMES, config(3), group=_Rank(rank=r, world_size=2)) for r in (0, 1))
    assert all(torch.equal(a, b) for a, b in zip(rank0.model.state_dict().values(), rank1.model.state_dict().values()))
    mask0, mask1 = _first_mask(rank0), _first_mask(rank1)
    assert not torch.equal(mask0, mask1)  # the old code: every rank drew the same masks from the same seed
    assert abs(float(mask0.float().mean()) - 0.2) < 0.03 and abs(float(mask1.float().mean()) - 0.2) < 0.03
    again = Trainer.from_text(NAMES, config(3), group=_Rank(rank=1, world_size=2))
    assert torch.equal(_first_mask(again), mask1)


def test_starting_a_fine_tuning_run_leaves_the_global_generator_alone():

    from llmviz.adapt import finetune
    from llmviz.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    torch.manual_seed(4242)
    state = torch.get_rng_state()
    trainer = finetune.FineTuneTrainer(finetune.FineTuneConfig(mode="head", steps=2, seed=7), tokenizer, model)
    assert torch.initial_seed() == 4242 and torch.equal(torch.get_rng_state(), state)  # the old code seeded it with 7
    again = finetune.FineTuneTrainer(finetune.FineTuneConfig(mode="head", steps=2, seed=7), tokenizer, model)
    assert torch.equal(trainer.classifier.head.weight, again.classifier.head.weight)  # the run's seed still decides


@pytest.mark.slow  # trains and samples every kind of run the server starts: ~6 s quiet
def test_no_code_the_server_runs_seeds_the_global_generator():
    """Static: torch.manual_seed / torch.seed / default_generator.manual_seed appear only inside
    device.isolated_rng (which puts the state back) and in doctest examples."""
    import ast

    root = ROOT
    files = [
        root / "app.py",
        *sorted((root / "stages").glob("*.py")),
        *sorted((root / "ui").rglob("*.py")),
        *sorted((root / "llmviz").rglob("*.py")),
    ]
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = ast.unparse(node.func.value)
            if (owner, node.func.attr) in {
                ("torch", "manual_seed"),
                ("torch", "seed"),
                ("torch.random", "manual_seed"),
                ("torch.cuda", "manual_seed"),
                ("torch.cuda", "manual_seed_all"),
                ("torch.default_generator", "manual_seed"),
            }:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    # isolated_rng's, inside fork_rng; and a warm Ray actor's reset to a fresh process's state (torch.seed(): a new
    # seed from the OS), which runs in the worker actor's own process before a job, never in the server
    assert [place.split(":")[0] for place in found] == ["llmviz/device.py", "llmviz/jobs/ray_executor.py"], found
