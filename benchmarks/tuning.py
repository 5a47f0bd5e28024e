"""SFT and DPO: llmviz's trainers vs TRL's ``SFTTrainer`` and ``DPOTrainer`` on the same model, data and settings.

    python benchmarks/tuning.py [--quick] [--sft-steps 60] [--dpo-steps 40] [--round-steps 5] [--threads 1]

**The model.** Both sides train the same weights: SFT starts from the shipped GPT (``data/gpt-python-docs``), DPO from
the shipped SFT model (``data/gpt-python-docs-sft``), as ``scripts/train_shipped_models.sh`` trains them. They are
read into GPT-2's layout, the one ``transformers.GPT2LMHeadModel`` has (4 layers, 4 heads, d 128, context 128,
vocabulary 4,096, the tanh GELU, a tied head, dropout 0): the shipped GPT has no query/key/value biases and GPT-2
always has them, so both sides get them, at zero, and train them. llmviz's side is its own ``GPT``; TRL's is a
``GPT2LMHeadModel`` with the same weights, converted by llmviz's own converter
(``llmviz.hub.gpt2.llmviz_state_to_hf``), not a random one: the run checks that the two give the same logits.

**The data.** ``data/instructions/sft_train.jsonl`` and ``dpo_train.jsonl``, encoded once by llmviz's template
(``llmviz.adapt.sft.encode_example``: prompt, answer, ``<|endoftext|>``), so that both sides see identical token ids:
TRL's ``SFTTrainer`` as a pre-tokenized dataset (``input_ids`` and ``completion_mask``, ``completion_only_loss``),
TRL's ``DPOTrainer`` (which always tokenizes text itself) through a ``PreTrainedTokenizerFast`` whose tokens are the
ids written as decimal numbers (``"12 407 9"`` → ``[12, 407, 9]``). The longest example is 123 ids: no side cuts any
(``max_length`` 128, the context). The batches are the same too: llmviz's trainers draw theirs from a generator
seeded with ``--seed``; the benchmark draws the same rows with the same seed and hands them to TRL in that order
(``train_sampling_strategy="sequential"``).

**The settings.** Both: AdamW at a constant learning rate (no warm-up, no decay, weight decay 0, β 0.9/0.999),
gradient clipping at 1, float32 (TRL's own default is bf16), every activation kept for the backward pass (TRL's own
default is gradient checkpointing, which recomputes them), the CPU, ``--threads`` torch threads, the batch (SFT 16
examples, DPO 8 pairs = 16 rows), the steps, the learning rate (SFT 1e-3, DPO 1e-4) and β (0.1, the ``sigmoid`` loss)
of the shipped checkpoints, and for DPO a frozen reference that runs on every batch (TRL:
``precompute_ref_log_probs=False``, the reference given as a second model). Each side runs its trainer's own loop:
llmviz's ``run()`` generator (its per-step metrics; its held-out evaluation set past the last step), TRL's
``train()`` (transformers' Trainer with its dataloader, collator, its default optimizer ``adamw_torch_fused`` and its
logging every 10 steps; no progress bar or printer), paused at the end of each round by a callback. llmviz's
optimizer is ``torch.optim.AdamW`` with its defaults (not fused).

**Doing the same work.** Before either trains, each computes the first batch's loss with its own code (llmviz's
``masked_loss`` / DPO ``summarise``; TRL's ``compute_loss`` on a batch of its own dataloader): they must agree to 1e-4,
and for DPO (whose first loss is ln 2 on both sides: the policy is its reference) the mean summed log-probability of
the chosen and of the rejected answers too. What still differs, by design of the two libraries: transformers' model
reads every token of a row and shifts the labels inside (the last position's logits unused), llmviz's reads all but
the last; TRL's SFT computes the entropy and token accuracy of every batch, its DPO the rewards, logits and entropy.

**Measured.** Each side trains in a child process of its own (so each one's peak memory is its own), in alternating
rounds of ``--round-steps`` steps (``benchmarks/_rounds.py``: the side that goes first alternates, each round's ratio
taken at once), the first round (each side's first steps, TRL's ``train()`` set-up) left out. tokens/s: the tokens
of the compared rounds' batches (prompt, answer and end token of every row, padding not counted; identical on both
sides) per second of training; the speed ratio is the median per-round ratio with its spread, beside the load
average. Peak: the child's peak resident memory above its size after its libraries were imported and the starting
weights loaded, before it built its model(s), copies and trainer (Linux, /proc/self/clear_refs; ``_peak.py``).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import platform
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch  # noqa: E402
from _peak import peak_since, reset_peak  # noqa: E402 - this folder is on sys.path (the benchmarks' helpers)
from _rounds import Rounds, child_rounds, load_average  # noqa: E402

SIDES = ("TRL", "llmviz")
START = {"sft": ROOT / "data" / "gpt-python-docs", "dpo": ROOT / "data" / "gpt-python-docs-sft"}
LOSS_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Task:
    """One comparison: ``kind`` "sft" or "dpo" and its settings (the same on both sides)."""

    kind: str
    steps: int
    batch: int
    lr: float
    beta: float
    seed: int
    round_steps: int
    threads: int


# ---------------------------------------------------------------------------- the shared model and data


def start_model(kind: str):
    """The starting GPT in GPT-2's layout (query/key/value biases added at zero), float32, and its tokenizer."""
    from llmviz.models.gpt import GPT
    from llmviz.training.checkpoint import load_checkpoint

    shipped, tokenizer, _ = load_checkpoint(START[kind])
    model = GPT(shipped.config.replace(qkv_bias=True, dropout=0.0), initialise=False)
    missing = model.load_state_dict(shipped.state_dict(), strict=False).missing_keys
    assert all(name.endswith("attn.qkv.bias") for name in missing), missing
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.bias.zero_()
    return model.float().eval(), tokenizer


def hf_model(model):
    """transformers' GPT2LMHeadModel with ``model``'s weights (llmviz's own converter)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from llmviz.hub.gpt2 import llmviz_state_to_hf

    c = model.config
    end = c.vocab_size - 1  # the shipped tokenizer's <|endoftext|>
    config = GPT2Config(
        vocab_size=c.vocab_size,
        n_positions=c.context_length,
        n_embd=c.d_model,
        n_layer=c.n_layers,
        n_head=c.n_heads,
        activation_function="gelu_new" if c.gelu == "tanh" else "gelu",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=True,
        bos_token_id=end,
        eos_token_id=end,
        pad_token_id=end,
    )
    hf = GPT2LMHeadModel(config)
    missing = hf.load_state_dict(llmviz_state_to_hf(model), strict=False).missing_keys
    assert missing == ["lm_head.weight"], missing  # tied to the token table
    return hf.float()


def training_rows(kind: str) -> tuple[list[dict], list[dict]]:
    from llmviz.adapt import instructions

    return instructions.load_set(kind, "train"), instructions.load_set(kind, "validation")


def encoded(kind: str, tokenizer, rows: list[dict], context: int) -> list:
    """The training rows as llmviz's trainers encode them: Encoded (SFT) or Pair (DPO)."""
    from llmviz.adapt import dpo, sft

    return sft.encode_rows(tokenizer, rows, context) if kind == "sft" else dpo.encode_pairs(tokenizer, rows, context)


def batch_rows(count: int, task: Task) -> list[list[int]]:
    """The rows of each step's batch, as llmviz's trainers draw them (one generator seeded with the run's seed),
    for ``task.steps + 1`` steps (TRL's data runs one step past the last)."""
    generator = torch.Generator().manual_seed(task.seed)
    return [torch.randint(count, (task.batch,), generator=generator).tolist() for _ in range(task.steps + 1)]


def example_tokens(kind: str, example) -> int:
    return len(example.ids) if kind == "sft" else len(example.chosen.ids) + len(example.rejected.ids)


# ---------------------------------------------------------------------------- llmviz's side


def llmviz_trainer(task: Task, model, tokenizer, train_rows, val_rows):
    from llmviz.adapt import dpo, sft

    common = dict(
        steps=task.steps + 1, batch_size=task.batch, lr=task.lr, eval_interval=10**9, seed=task.seed, device="cpu"
    )  # one step past the last: the held-out evaluation its last step takes is never reached
    if task.kind == "sft":
        return sft.SftRunner(sft.SftConfig(**common), tokenizer, model, train_rows, val_rows)
    return dpo.DpoRunner(dpo.DpoConfig(beta=task.beta, **common), tokenizer, model, train_rows, val_rows)


@torch.no_grad()
def llmviz_first(trainer, task: Task, rows: list[int]) -> dict[str, float]:
    """The first batch's loss (and DPO's mean summed log-probabilities) by llmviz's own code."""
    from llmviz.adapt import dpo, sft

    if task.kind == "sft":
        inputs, labels = sft.batch_examples([trainer.train_examples[i] for i in rows])  # (B, T), (B, T)
        logits, _ = trainer.model(inputs)  # (B, T, V)
        return {"loss": float(sft.masked_loss(logits, labels))}
    inputs, labels = dpo.pair_batch([trainer.train_pairs[i] for i in rows])  # (2B, T), (2B, T)
    scores = dpo.pair_scores(trainer.model, trainer.reference, inputs, labels)
    loss, _ = dpo.summarise(scores, task.beta)
    return {
        "loss": float(loss),
        "logps/chosen": float(scores.policy_chosen.mean()),
        "logps/rejected": float(scores.policy_rejected.mean()),
    }


# ---------------------------------------------------------------------------- TRL's side


def id_tokenizer(vocab_size: int):
    """A PreTrainedTokenizerFast whose tokens are token ids written in decimal ("12 407 9" → [12, 407, 9])."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    end = str(vocab_size - 1)
    inner = Tokenizer(models.WordLevel({str(i): i for i in range(vocab_size)}, unk_token=end))
    inner.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    inner.decoder = decoders.WordPiece()  # joins the pieces with spaces
    return PreTrainedTokenizerFast(tokenizer_object=inner, eos_token=end, pad_token=end)


def as_text(ids: list[int]) -> str:
    return " ".join(map(str, ids))


def trl_rows(kind: str, examples: list, order: list[list[int]]) -> list[dict]:
    """The batches' rows in order, as TRL reads them: pre-tokenized (SFT) or as id-text (DPO)."""
    picked = [examples[i] for step in order for i in step]
    if kind == "sft":
        return [
            {"input_ids": e.ids, "completion_mask": [0] * e.prompt_tokens + [1] * e.response_tokens} for e in picked
        ]
    rows = []
    for pair in picked:
        prompt = pair.chosen.ids[: pair.chosen.prompt_tokens]
        assert pair.rejected.ids[: pair.rejected.prompt_tokens] == prompt
        chosen, rejected = pair.chosen.ids[len(prompt) :], pair.rejected.ids[len(prompt) :]
        rows.append({"prompt": as_text(prompt), "chosen": " " + as_text(chosen), "rejected": " " + as_text(rejected)})
    return rows


def trl_trainer(task: Task, model, examples: list, order: list[list[int]], folder: str):
    import trl
    from datasets import Dataset

    settings = dict(
        output_dir=folder,
        max_steps=task.steps + 1,
        per_device_train_batch_size=task.batch,
        learning_rate=task.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        bf16=False,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        eval_strategy="no",
        disable_tqdm=True,
        seed=task.seed,
        train_sampling_strategy="sequential",
        dataloader_num_workers=0,
        max_length=model.config.n_positions,
        gradient_checkpointing=False,  # TRL's default is True: llmviz keeps every activation, so TRL does here too
    )
    data = Dataset.from_list(trl_rows(task.kind, examples, order))
    tokenizer = id_tokenizer(model.config.vocab_size)
    if task.kind == "sft":
        config = trl.SFTConfig(completion_only_loss=True, packing=False, **settings)
        return trl.SFTTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer)
    reference = hf_model_copy(model)
    config = trl.DPOConfig(beta=task.beta, loss_type=["sigmoid"], precompute_ref_log_probs=False, **settings)
    return trl.DPOTrainer(model=model, ref_model=reference, args=config, train_dataset=data, processing_class=tokenizer)


def hf_model_copy(model):
    import copy

    reference = copy.deepcopy(model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return reference


@torch.no_grad()
def trl_first(trainer, task: Task) -> dict[str, float]:
    """The first batch's loss (and DPO's mean summed log-probabilities) by TRL's own compute_loss, on the first
    batch of its own dataloader (the trainer's recorded metrics are cleared after)."""
    batch = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))
    loss = float(trainer.compute_loss(trainer.model, batch))
    found = {"loss": loss}
    if task.kind == "dpo":
        metrics = trainer._metrics["train"]
        found |= {"logps/chosen": metrics["logps/chosen"][-1], "logps/rejected": metrics["logps/rejected"][-1]}
    trainer._metrics["train"].clear()
    return found


# ---------------------------------------------------------------------------- a side in a process of its own


class Pace:
    """A child's end of the rounds: each message from the parent is a round's step count (``None``: stop); after
    that many steps the round's wall-clock and CPU seconds go back."""

    def __init__(self, connection):
        self.connection = connection
        self.left = 0
        self.began = (0.0, 0.0)

    def begin(self) -> bool:
        count = self.connection.recv()
        if count is None:
            return False
        self.left = count
        self.began = (time.perf_counter(), time.process_time())
        return True

    def stepped(self) -> bool:
        """One step done; False when the parent says stop."""
        self.left -= 1
        if self.left:
            return True
        self.connection.send((time.perf_counter() - self.began[0], time.process_time() - self.began[1]))
        return self.begin()


def pace_callback(pace: Pace):
    from transformers import TrainerCallback

    class Paced(TrainerCallback):
        """Holds TRL's own ``train()`` loop at the end of each round."""

        def on_step_end(self, args, state, control, **kwargs):
            if not pace.stepped():
                control.should_training_stop = True

    return Paced()


def child(which: str, task: Task, connection) -> None:
    """One side of one task: builds its trainer, reports its first batch's loss, trains in the parent's rounds,
    then sends its peak memory. Its libraries are imported before the peak is reset (their size counts on neither
    side; the llmviz side does not import TRL)."""
    import llmviz.adapt.dpo  # noqa: F401

    if which == "TRL":
        import datasets
        import transformers
        import trl  # noqa: F401

        warnings.simplefilter("ignore", FutureWarning)  # transformers' renames (gradient_checkpointing)
        transformers.logging.set_verbosity_error()
        datasets.disable_progress_bars()
    torch.set_num_threads(task.threads)
    model, tokenizer = start_model(task.kind)
    train_rows, val_rows = training_rows(task.kind)
    examples = encoded(task.kind, tokenizer, train_rows, model.config.context_length)
    order = batch_rows(len(examples), task)
    pace = Pace(connection)
    with tempfile.TemporaryDirectory() as folder:
        before = reset_peak()
        if which == "llmviz":
            trainer = llmviz_trainer(task, model, tokenizer, train_rows, val_rows)
            draws = torch.Generator()
            draws.set_state(trainer.generator.get_state())  # its first batch's rows are the ones TRL is given first
            assert torch.randint(len(examples), (task.batch,), generator=draws).tolist() == order[0]
            connection.send(llmviz_first(trainer, task, order[0]))
            steps = trainer.run()
            running = pace.begin()
            while running:
                next(steps)
                running = pace.stepped()
        else:
            from transformers import PrinterCallback

            trainer = trl_trainer(task, hf_model(model), examples, order, folder)
            connection.send(trl_first(trainer, task))
            trainer.remove_callback(PrinterCallback)  # its print of the logs: noise in the table
            trainer.add_callback(pace_callback(pace))
            if pace.begin():
                trainer.train()
        connection.send(peak_since(before))


# ---------------------------------------------------------------------------- the parent


@dataclass
class Result:
    """One task's measurements."""

    task: Task
    wall: Rounds
    cpu: Rounds
    peak: dict[str, int]
    first: dict[str, dict[str, float]]
    tokens: int  # the compared rounds' tokens (the same on both sides)
    logits_gap: float


def checks(task: Task) -> tuple[int, float]:
    """The compared rounds' tokens (every row's ids, padding not counted: the same on both sides), and the largest
    difference between llmviz's and transformers' logits for the starting weights on the first batch."""
    from llmviz.adapt import dpo, sft

    model, tokenizer = start_model(task.kind)
    examples = encoded(task.kind, tokenizer, training_rows(task.kind)[0], model.config.context_length)
    order = batch_rows(len(examples), task)
    first = min(task.round_steps, task.steps)
    tokens = sum(example_tokens(task.kind, examples[i]) for step in order[first : task.steps] for i in step)
    picked = [examples[i] for i in order[0]]
    inputs, _ = sft.batch_examples(picked) if task.kind == "sft" else dpo.pair_batch(picked)  # (B, T)
    with torch.no_grad():
        ours, _ = model(inputs)  # (B, T, V)
        theirs = hf_model(model)(inputs).logits  # (B, T, V)
    return tokens, float((ours - theirs).abs().max())


def compare(task: Task) -> Result:
    """Both sides of ``task`` in child processes, in alternating rounds."""
    context = multiprocessing.get_context("spawn")  # a forked child of a process that ran torch's threads can hang
    pipes = {name: context.Pipe() for name in SIDES}
    processes = [context.Process(target=child, args=(name, task, pipes[name][1])) for name in SIDES]
    for process in processes:
        process.start()
    for name in SIDES:
        pipes[name][1].close()  # the child's end is the child's alone: a child that fails ends the parent's wait (EOF)
    tokens, gap = checks(task)  # while the children start
    first = {name: pipes[name][0].recv() for name in SIDES}
    # rounds: both sides train the same steps, the side that goes first alternating; the first round (each side's
    # first steps, TRL's train() set-up) is not compared
    wall, cpu = child_rounds(pipes, SIDES, task.steps, task.round_steps)
    peak = {}
    for name in SIDES:
        pipes[name][0].send(None)
        peak[name] = pipes[name][0].recv()
    for process in processes:
        process.join()
    return Result(task, wall, cpu, peak, first, tokens, gap)


def same_work(result: Result) -> tuple[bool, str]:
    """Whether both sides' first-batch numbers agree to :data:`LOSS_TOLERANCE`, and the numbers in words."""
    ours, theirs = result.first["llmviz"], result.first["TRL"]
    gaps = {key: abs(ours[key] - theirs[key]) for key in ours}
    words = ", ".join(f"{key} {ours[key]:.5f} vs {theirs[key]:.5f}" for key in ours)
    return max(gaps.values()) <= LOSS_TOLERANCE, f"{words} (largest gap {max(gaps.values()):.1e})"


def report(result: Result) -> bool:
    """Print one task's table and ratios; True when both sides did the same work."""
    task = result.task
    name = task.kind.upper()
    print(
        f"\n{name}: {task.steps} steps in rounds of {task.round_steps}, batch {task.batch}"
        f"{' pairs' if task.kind == 'dpo' else ''}, lr {task.lr:g}"
        f"{f', β {task.beta:g}' if task.kind == 'dpo' else ''}, from {START[task.kind].relative_to(ROOT)}\n"
    )
    print(f"{'trainer':<18}| {'tokens/s':>10} | {'peak (MB)':>10}")
    print("-" * 44)
    for side in SIDES:
        label = {"TRL": f"TRL {name}Trainer", "llmviz": f"llmviz {name}Trainer"}[side]
        seconds = sum(result.wall.seconds.get(side, [])) or float("nan")
        print(f"{label:<18}| {result.tokens / seconds:>10,.0f} | {result.peak[side] / 2**20:>10.1f}")
    ok, words = same_work(result)
    print(
        f"\n{name} llmviz / TRL tokens/s, per round (TRL's seconds over llmviz's): "
        f"{result.wall.summary('TRL', 'llmviz')}"
        f"\n  by CPU time: {result.cpu.summary('TRL', 'llmviz')}"
        f"\n{name} llmviz / TRL peak memory: {result.peak['llmviz'] / max(result.peak['TRL'], 1):.2f}×"
        f"\n{name} same work: logits of the starting weights within {result.logits_gap:.1e}; first batch: {words}: "
        f"{'SAME' if ok else 'DIFFERENT'}"
    )
    return ok


def tasks(args) -> list[Task]:
    common = dict(seed=args.seed, round_steps=args.round_steps, threads=args.threads)
    return [
        Task("sft", args.sft_steps, args.sft_batch, args.sft_lr, 0.0, **common),
        Task("dpo", args.dpo_steps, args.dpo_batch, args.dpo_lr, args.beta, **common),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 steps of each in rounds of 2 (a smoke run)")
    parser.add_argument("--sft-steps", type=int, default=60)
    parser.add_argument("--dpo-steps", type=int, default=40)
    parser.add_argument("--sft-batch", type=int, default=16, help="examples per SFT step")
    parser.add_argument("--dpo-batch", type=int, default=8, help="pairs per DPO step (2 rows each)")
    parser.add_argument("--sft-lr", type=float, default=1e-3)
    parser.add_argument("--dpo-lr", type=float, default=1e-4)
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--round-steps", type=int, default=5, help="steps of each side in one round")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per trainer (default 1: a shared CPU)")
    args = parser.parse_args()
    if args.quick:
        args.sft_steps = args.dpo_steps = 6
        args.round_steps = 2
    import transformers
    import trl

    load_before = load_average()
    results = [compare(task) for task in tasks(args)]
    print(
        f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · torch {torch.__version__}, "
        f"{args.threads} threads · TRL {trl.__version__}, transformers {transformers.__version__} · the shipped "
        f"GPT's shape in GPT-2's layout (4 layers, d 128, context 128, vocabulary 4,096), float32, CPU\n"
        f"load average: {load_before} before, {load_average()} after"
    )
    same = [report(result) for result in results]
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
